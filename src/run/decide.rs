//! The decide phase: every shape's verdict under the planned two-stage design
//! ([`crate::evaluate::decide_planned`], the one function that decides when a shape gets its
//! second look), the second stage measured here where a shape's first look leaves it open.

use anyhow::Result;

use std::cell::Cell;

use super::session::{Session, stored_side};
use super::shape::Failure;
use super::stages::Finishing;
use crate::backend::Backend;

/// Decides every shape, measuring the design's second stage (up to `max` rounds) of each
/// shape the first look leaves open; the GPU's processes are read after each one.
pub(super) fn decide(s: &mut Session, backend: &mut dyn Backend) -> Result<()> {
    let run = s.run;
    let design = s.design;
    // Whether another process has been seen on the GPU so far (`ProcessWatch::shared`), read
    // again after each second stage: the watch itself is the second stage's to sample.
    let shared = Cell::new(s.watch.shared());
    let stored = &s.stored;
    let finishing = Finishing {
        config: &run.config,
        design,
        stored,
        peak_tflops: s.peak_tflops,
    };
    let (runs, watch, bar) = (&mut s.runs, &mut s.watch, &s.bar);
    let second_stage = |i: usize, shape: &mut crate::results::ShapeResult| -> Result<()> {
        bar.set_message(format!("{} (second stage)", shape.name));
        if let Some(measuring) = runs[i].as_mut() {
            match measuring.more(backend, &run.config, design.max - design.stage1) {
                Ok(()) => finishing.finish(shape, measuring),
                Err(e) => Failure::from(e).record(shape)?,
            }
        }
        watch.sample(backend);
        shared.set(watch.shared());
        Ok(())
    };
    s.passed = crate::evaluate::decide_planned(
        &mut s.shapes,
        design,
        &run.config.gate,
        run.policy(),
        |shape| stored_side(stored, shared.get(), shape),
        second_stage,
    )?;
    Ok(())
}
