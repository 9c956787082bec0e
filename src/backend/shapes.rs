//! The device state both backends keep of the shapes they measure: each shape's parameters,
//! its sides and the coin that orders its pairs ([`ShapeSlot`]), by the [`ShapeHandle`] that
//! [`super::Measure::begin`] returned ([`ShapeSlots`]). What differs between the GPU and
//! the simulation (held buffers, an injection, a noise stream) is the slot's `state`. What
//! the sides measured is not here: the engine keeps it (`run::shape`).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{GpuError, ShapeHandle, Side};
use crate::config::{MeasureSettings, ShapeParams, Tolerance};

/// One shape being measured.
pub struct ShapeSlot<T> {
    pub params: ShapeParams,
    /// The sides in the order `begin` was given them.
    pub sides: Vec<Side>,
    pub settings: MeasureSettings,
    pub tolerance: Tolerance,
    /// Draws the order of each pair (seeded by `begin`'s `coin_seed`).
    pub coin: ChaCha8Rng,
    /// What the backend keeps of the shape besides.
    pub state: T,
}

impl<T> ShapeSlot<T> {
    /// A shape with nothing measured yet.
    pub fn new(
        params: ShapeParams,
        sides: &[Side],
        settings: &MeasureSettings,
        tolerance: Tolerance,
        coin_seed: u64,
        state: T,
    ) -> ShapeSlot<T> {
        ShapeSlot {
            params,
            sides: sides.to_vec(),
            settings: settings.clone(),
            tolerance,
            coin: ChaCha8Rng::seed_from_u64(coin_seed),
            state,
        }
    }
}

/// The shapes begun, by handle; an ended shape's slot is empty.
pub struct ShapeSlots<T> {
    slots: Vec<Option<ShapeSlot<T>>>,
}

impl<T> Default for ShapeSlots<T> {
    fn default() -> Self {
        ShapeSlots { slots: Vec::new() }
    }
}

impl<T> ShapeSlots<T> {
    /// Keeps a shape just begun; its handle.
    pub fn begin(&mut self, slot: ShapeSlot<T>) -> ShapeHandle {
        self.slots.push(Some(slot));
        ShapeHandle::new(self.slots.len() - 1)
    }

    /// The shape `shape`, unless it was ended.
    pub fn get(&self, shape: &ShapeHandle) -> Option<&ShapeSlot<T>> {
        self.slots.get(shape.index()).and_then(Option::as_ref)
    }

    /// The shape to measure `what` of ("a pair", "energy"): an error once it was ended.
    pub fn live(
        &mut self,
        shape: &ShapeHandle,
        what: &'static str,
    ) -> Result<&mut ShapeSlot<T>, GpuError> {
        self.slots
            .get_mut(shape.index())
            .and_then(Option::as_mut)
            .ok_or(GpuError::Ended { what })
    }

    /// Takes the shape out to measure `what` of it while the backend is borrowed otherwise;
    /// [`ShapeSlots::put`] brings it back.
    pub fn take(
        &mut self,
        shape: &ShapeHandle,
        what: &'static str,
    ) -> Result<ShapeSlot<T>, GpuError> {
        self.slots
            .get_mut(shape.index())
            .and_then(Option::take)
            .ok_or(GpuError::Ended { what })
    }

    /// Brings back a shape [`ShapeSlots::take`] took.
    pub fn put(&mut self, shape: &ShapeHandle, slot: ShapeSlot<T>) {
        if let Some(s) = self.slots.get_mut(shape.index()) {
            *s = Some(slot);
        }
    }

    /// Forgets the shape (and drops what its state holds).
    pub fn end(&mut self, shape: ShapeHandle) {
        if let Some(slot) = self.slots.get_mut(shape.index()) {
            *slot = None;
        }
    }
}
