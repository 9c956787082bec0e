//! The shapes a backend is measuring, as both backends keep them: each shape's sides with
//! their measurements so far and the order of every pair kept ([`ShapeSlot`]), by the
//! [`ShapeId`] that [`super::Backend::begin`] returned ([`ShapeSlots`]). What differs between
//! the GPU and the simulation (held buffers, an injection, a noise stream) is the slot's
//! `state`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{GpuError, Measurement, ShapeId, Side, empty_measurement};
use crate::config::{MeasureSettings, ShapeParams, Tolerance};
use crate::results::PairOrder;

/// One shape being measured.
pub struct ShapeSlot<T> {
    pub params: ShapeParams,
    /// The sides in the order `begin` was given them, each with what it measured so far.
    pub sides: Vec<(Side, Measurement)>,
    pub settings: MeasureSettings,
    pub tolerance: Tolerance,
    /// Draws the order of each pair (seeded by `begin`'s `coin_seed`).
    pub coin: ChaCha8Rng,
    /// The order of each pair kept.
    pub orders: Vec<PairOrder>,
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
            sides: sides.iter().map(|s| (*s, Measurement::empty())).collect(),
            settings: settings.clone(),
            tolerance,
            coin: ChaCha8Rng::seed_from_u64(coin_seed),
            orders: Vec::new(),
            state,
        }
    }
}

/// The shapes begun, by id; an ended shape's slot is empty.
pub struct ShapeSlots<T> {
    slots: Vec<Option<ShapeSlot<T>>>,
}

impl<T> Default for ShapeSlots<T> {
    fn default() -> Self {
        ShapeSlots { slots: Vec::new() }
    }
}

impl<T> ShapeSlots<T> {
    /// Keeps a shape just begun; its id.
    pub fn begin(&mut self, slot: ShapeSlot<T>) -> ShapeId {
        self.slots.push(Some(slot));
        self.slots.len() - 1
    }

    /// The shape `id`, unless it was ended.
    pub fn get(&self, id: ShapeId) -> Option<&ShapeSlot<T>> {
        self.slots.get(id).and_then(Option::as_ref)
    }

    /// The shape `id` to measure `what` of ("a pair", "energy"): an error once it was ended.
    pub fn live(&mut self, id: ShapeId, what: &'static str) -> Result<&mut ShapeSlot<T>, GpuError> {
        self.slots
            .get_mut(id)
            .and_then(Option::as_mut)
            .ok_or(GpuError::Ended { what })
    }

    /// Takes the shape `id` out to measure `what` of it while the backend is borrowed
    /// otherwise; [`ShapeSlots::put`] brings it back.
    pub fn take(&mut self, id: ShapeId, what: &'static str) -> Result<ShapeSlot<T>, GpuError> {
        self.slots
            .get_mut(id)
            .and_then(Option::take)
            .ok_or(GpuError::Ended { what })
    }

    /// Brings back a shape [`ShapeSlots::take`] took.
    pub fn put(&mut self, id: ShapeId, slot: ShapeSlot<T>) {
        if let Some(s) = self.slots.get_mut(id) {
            *s = Some(slot);
        }
    }
}

/// What the pipeline reads and drops of the shapes a backend measures (through
/// [`super::Backend`]'s provided methods), whatever else the backend keeps of them.
pub trait Bookkeeping {
    /// Forgets the last round of every side of shape `id`, and the last pair's order.
    fn drop_last(&mut self, id: ShapeId);
    /// What side `index` of shape `id` measured so far; nothing once it was ended.
    fn measurement(&self, id: ShapeId, index: usize) -> &Measurement;
    /// The order of each pair of shape `id` kept.
    fn orders(&self, id: ShapeId) -> &[PairOrder];
    /// Forgets shape `id` (and drops what its state holds).
    fn end(&mut self, id: ShapeId);
}

impl<T> Bookkeeping for ShapeSlots<T> {
    fn drop_last(&mut self, id: ShapeId) {
        if let Some(s) = self.slots.get_mut(id).and_then(Option::as_mut) {
            for (_, m) in &mut s.sides {
                m.drop_last();
            }
            if s.sides.len() == 2 {
                s.orders.pop();
            }
        }
    }

    fn measurement(&self, id: ShapeId, index: usize) -> &Measurement {
        match self.get(id).and_then(|s| s.sides.get(index)) {
            Some((_, m)) => m,
            None => empty_measurement(),
        }
    }

    fn orders(&self, id: ShapeId) -> &[PairOrder] {
        self.get(id).map_or(&[], |s| &s.orders)
    }

    fn end(&mut self, id: ShapeId) {
        if let Some(slot) = self.slots.get_mut(id) {
            *slot = None;
        }
    }
}
