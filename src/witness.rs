//! The host's clock as a witness of every timed sample.
//!
//! A sample's time is the span between two CUDA events recorded around its replay. The GPU
//! writes the events' timestamps into driver memory of the process's CUDA context, the
//! context the kernel under test runs in and can write (a kernel node's parameter memory,
//! driver memory too, was found writable through a generic address: docs/MEASURING.md). A
//! kernel that finds the start event's record while it runs can move it later and shorten
//! its own time without doing less work, and no check of its output would see it.
//!
//! So the host reads its own clock around every sample: from just before the lead-in spin
//! (everything queued before it has finished: the GPU is idle) to the moment it sees the end
//! event complete. That span minus the events' span is the sample's **unwitnessed** time:
//! the spin, the launch latencies and the host's wake-up, none of which the kernel under test
//! does, so the two sides of an A/B run, sampled alternately in the same stretch of time,
//! have the same unwitnessed time up to noise. Time taken out of a side's event record shows
//! as unwitnessed time that side has and the other has not (as does time added to the other
//! side's record: a base under test can make itself look slower): where one side's median
//! exceeds the other's by more than [`limit_us`], no time of the shape is believed
//! ([`judge`]: an `error`, which never passes).
//!
//! A run with one side (no base) is judged against a **control** instead ([`judge_alone`]):
//! the harness's own lead-in spin, sampled the same way with no kernel under test.
//!
//! The medians are recorded with the shape ([`record`]: the results' `measurement.
//! unwitnessed`) and judged from that record at the run's one decision ([`judge_recorded`],
//! `run::decide`), where a GPU shared with another process is known (then nothing is judged,
//! nor where the config sets `gate.witness: false`).
//!
//! A kernel that also writes the end event's completion early, so that the host wakes with
//! it and sees no more than the events do, leaves the host waiting longer for the checks
//! that follow the replay in stream order: the second test of a pair ([`judge`]) compares
//! those waits. What it does not stop: a kernel that also writes the completion of the
//! stream's later work (the host learns of every completion through driver memory), and a
//! run without a base has no second side for that test. docs/SECURITY.md says so.
//!
//! Cost: three clock readings and two more waits per sample (for an idle GPU before the
//! lead-in, for the end event), inside the duty cycle's idle time; a median per side per
//! shape; the control's ~0.3 s once in a run with one side.

use crate::results::Unwitnessed;
use crate::stats::median;

/// Samples each side needs before its unwitnessed time is judged: a median of fewer could
/// move with a few host stalls.
pub const MIN_SAMPLES: usize = 40;

/// The largest difference between the sides' median unwitnessed times that is not judged,
/// as a share of a sample's time ...
pub const SHARE: f64 = 0.015;

/// ... and at least this many µs. The honest difference is the spread of two medians of the
/// same host wake-ups and lead-in spins: a few µs.
pub const FLOOR_US: f64 = 30.0;

/// One side's unwitnessed time, over its samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SideWitness {
    /// Median µs per sample the host saw that the events did not.
    pub unwitnessed_us: f64,
    /// Median µs of a whole sample (the events' span).
    pub sample_us: f64,
    /// Samples with both times.
    pub samples: usize,
    /// Median µs from the host's seeing a sample's end event to the end of its checks (the
    /// harness's work after the replay, the same for both sides); `None` where not recorded
    /// (the control has no checks).
    pub after_end_us: Option<f64>,
}

impl SideWitness {
    /// A side's witness from its rounds: per-launch times (`rounds`, as the results hold
    /// them), the launches of one sample, each sample's unwitnessed µs by round
    /// (`unwitnessed`) and its wait after the end event (`after_end`, may be empty). A round
    /// whose lists differ in length, or a time that is not finite, is left out; `None` where
    /// no sample is left (a device that does not witness).
    pub fn of(
        rounds: &[Vec<f64>],
        unwitnessed: &[Vec<f64>],
        after_end: &[Vec<f64>],
        launches_per_sample: u32,
    ) -> Option<SideWitness> {
        let after: Vec<f64> = rounds
            .iter()
            .zip(after_end)
            .filter(|(times, a)| times.len() == a.len())
            .flat_map(|(_, a)| a.iter().copied())
            .filter(|a| a.is_finite())
            .collect();
        let launches = f64::from(launches_per_sample.max(1));
        let (mut samples, mut unseen) = (Vec::new(), Vec::new());
        for (times, unw) in rounds.iter().zip(unwitnessed) {
            if times.len() != unw.len() {
                continue;
            }
            for (t, u) in times.iter().zip(unw) {
                if t.is_finite() && u.is_finite() {
                    samples.push(t * launches);
                    unseen.push(*u);
                }
            }
        }
        Some(SideWitness {
            unwitnessed_us: median(&unseen)?,
            sample_us: median(&samples)?,
            samples: unseen.len(),
            after_end_us: median(&after),
        })
    }
}

/// The largest excess of one side's median unwitnessed time over the other's that is not
/// judged, for samples of `sample_us`: [`SHARE`] of it, at least [`FLOOR_US`].
pub fn limit_us(sample_us: f64) -> f64 {
    (SHARE * sample_us).max(FLOOR_US)
}

/// Whether the sides' unwitnessed times disagree: one sentence with both medians, or `None`
/// (they agree, a side is missing, or a side has fewer than [`MIN_SAMPLES`] samples).
/// `sides` are (label, witness), base first. The difference says that one record was
/// rewritten, not which: the side with more unwitnessed time was timed shorter than the
/// host saw, or the other longer (a base under test can make itself slower); the sentence
/// names both readings, the first one first.
pub fn judge(sides: [(&str, Option<SideWitness>); 2]) -> Option<String> {
    let [(base_label, Some(base)), (cand_label, Some(cand))] = sides else {
        return None;
    };
    if base.samples < MIN_SAMPLES || cand.samples < MIN_SAMPLES {
        return None;
    }
    judge_lead([(base_label, base), (cand_label, cand)])
        .or_else(|| judge_after_end([(base_label, base), (cand_label, cand)]))
}

/// [`judge`]'s first test: the lead-in and the replay.
fn judge_lead(sides: [(&str, SideWitness); 2]) -> Option<String> {
    let [(base_label, base), (cand_label, cand)] = sides;
    let (more_label, more, less_label, less) = if cand.unwitnessed_us >= base.unwitnessed_us {
        (cand_label, cand, base_label, base)
    } else {
        (base_label, base, cand_label, cand)
    };
    let excess = more.unwitnessed_us - less.unwitnessed_us;
    let limit = limit_us(more.sample_us);
    if excess <= limit {
        return None;
    }
    Some(format!(
        "the host's clock saw {excess:.0} µs ({:.1}% of a sample) more of the {more_label}'s timed samples than their events did, beyond the {less_label}'s (median unwitnessed time {:.0} µs over {} samples against {:.0} µs over {}; at most {limit:.0} µs is allowed): the {more_label}'s timing record may have been made shorter, or the {less_label}'s longer, by a kernel that can write it, so no time of this shape is believed (docs/MEASURING.md, \"The host's clock witnesses every sample\")",
        100.0 * excess / more.sample_us,
        more.unwitnessed_us,
        more.samples,
        less.unwitnessed_us,
        less.samples,
    ))
}

/// How many times [`limit_us`] a side alone may differ from the control: the control is
/// sampled once, before the shapes, so the SM clock its lead-in spins at can differ from a
/// shape's (a power-capped clock of 1,755 MHz against 1,980 lengthens the ~50 µs spin by
/// ~6.5 µs; the limit doubled covers a clock down to about half).
pub const ALONE_FACTOR: f64 = 2.0;

/// How many times [`limit_us`] the sides' waits after the end event may differ: the checks
/// are the same work for both, but not quite the same time (a module's `__constant__` data
/// is compared only where it has some; the outputs a check reads may still be in L2 after
/// one kernel and not after another).
pub const AFTER_END_FACTOR: f64 = 2.0;

/// [`judge`]'s second test: the wait from the end event to the end of the checks, which
/// run after the replay in stream order and do the same work for both sides. A side whose
/// wait is longer by more than [`AFTER_END_FACTOR`] × [`limit_us`] saw its end event
/// complete before its replay had (the completion is driver memory too): the host woke
/// early, which would hide time taken out of the start record from the first test.
fn judge_after_end(sides: [(&str, SideWitness); 2]) -> Option<String> {
    let [(base_label, base), (cand_label, cand)] = sides;
    let (b, c) = (base.after_end_us?, cand.after_end_us?);
    let (more_label, more, less_label, less, sample_us) = if c >= b {
        (cand_label, c, base_label, b, cand.sample_us)
    } else {
        (base_label, b, cand_label, c, base.sample_us)
    };
    let limit = AFTER_END_FACTOR * limit_us(sample_us);
    if more - less <= limit {
        return None;
    }
    Some(format!(
        "the host waited {:.0} µs longer from the {more_label}'s end event to the end of its checks than from the {less_label}'s (median {more:.0} µs against {less:.0} µs; at most {limit:.0} µs is allowed): the checks are the same work for both sides, so the {more_label}'s end event may have been signalled before its replay ended, by a kernel that can write it, and no time of this shape is believed (docs/MEASURING.md, \"The host's clock witnesses every sample\")",
        more - less
    ))
}

/// [`judge`] for a run with one side: its unwitnessed time against the **control**'s, the
/// harness's own lead-in spin sampled the same way with no kernel under test (a record no
/// kernel wrote). One sentence where they differ by more than [`ALONE_FACTOR`] ×
/// [`limit_us`] of the side's samples (either way: a record made shorter, or longer), else
/// `None` (or where either has fewer than [`MIN_SAMPLES`] samples).
pub fn judge_alone(
    label: &str,
    side: Option<SideWitness>,
    control: Option<SideWitness>,
) -> Option<String> {
    let (side, control) = (side?, control?);
    if side.samples < MIN_SAMPLES || control.samples < MIN_SAMPLES {
        return None;
    }
    let diff = side.unwitnessed_us - control.unwitnessed_us;
    let limit = ALONE_FACTOR * limit_us(side.sample_us);
    if diff.abs() <= limit {
        return None;
    }
    let (what, record) = if diff > 0.0 {
        ("more", "shorter")
    } else {
        ("less", "longer")
    };
    Some(format!(
        "the host's clock saw {:.0} µs ({:.1}% of a sample) {what} of the {label}'s timed samples than their events did, against the harness's own spin sampled the same way (median unwitnessed time {:.0} µs over {} samples against {:.0} µs over {}; at most {limit:.0} µs is allowed): the {label}'s timing record may have been made {record} by a kernel that can write it, so no time of this shape is believed (docs/MEASURING.md, \"The host's clock witnesses every sample\")",
        diff.abs(),
        100.0 * diff.abs() / side.sample_us,
        side.unwitnessed_us,
        side.samples,
        control.unwitnessed_us,
        control.samples,
    ))
}

/// What the results record of a shape's witness (`measurement.unwitnessed`): the
/// candidate's median unwitnessed time and sample, the base's or the control's median, and
/// the fewest samples any of them has.
pub fn record(
    cand: SideWitness,
    base: Option<SideWitness>,
    control: Option<SideWitness>,
) -> Unwitnessed {
    let other = base.or(control).map_or(cand.samples, |o| o.samples);
    Unwitnessed {
        candidate_us: cand.unwitnessed_us,
        base_us: base.map(|b| b.unwitnessed_us),
        control_us: control.map(|c| c.unwitnessed_us),
        candidate_after_end_us: cand.after_end_us,
        base_after_end_us: base.and_then(|b| b.after_end_us),
        sample_us: cand.sample_us,
        limit_us: limit_us(cand.sample_us),
        samples: cand.samples.min(other) as u64,
    }
}

/// The judgement on what a shape recorded ([`record`]): [`judge`] where a base was measured,
/// else [`judge_alone`] against the control; `None` where neither was.
pub fn judge_recorded(u: &Unwitnessed) -> Option<String> {
    let side = |unwitnessed_us, after_end_us| SideWitness {
        unwitnessed_us,
        sample_us: u.sample_us,
        samples: usize::try_from(u.samples).unwrap_or(usize::MAX),
        after_end_us,
    };
    let cand = Some(side(u.candidate_us, u.candidate_after_end_us));
    match (u.base_us, u.control_us) {
        (Some(base), _) => judge([
            ("base", Some(side(base, u.base_after_end_us))),
            ("candidate", cand),
        ]),
        (None, Some(control)) => judge_alone("candidate", cand, Some(side(control, None))),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A side's rounds as recorded: per-launch times, unwitnessed µs, waits after the end.
    type Recorded = (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<Vec<f64>>);

    /// Rounds of 10 samples: per-launch times of a 2 ms sample of `launches` launches, each
    /// sample's unwitnessed time from `unwitnessed`, and a wait of 300 µs after each end.
    fn side(rounds: usize, launches: u32, mut unwitnessed: impl FnMut() -> f64) -> Recorded {
        let per_launch = 2000.0 / f64::from(launches);
        (
            vec![vec![per_launch; 10]; rounds],
            (0..rounds)
                .map(|_| (0..10).map(|_| unwitnessed()).collect())
                .collect(),
            vec![vec![300.0; 10]; rounds],
        )
    }

    fn witness(s: &Recorded, launches: u32) -> Option<SideWitness> {
        SideWitness::of(&s.0, &s.1, &s.2, launches)
    }

    #[test]
    fn a_side_is_its_medians_over_every_sample_with_both_times() {
        let rounds = vec![vec![100.0, 101.0, 99.0], vec![102.0, f64::NAN]];
        let unw = vec![vec![50.0, 60.0, 55.0], vec![58.0, 57.0]];
        let after = vec![vec![300.0, 310.0, 320.0], vec![330.0]];
        let w = SideWitness::of(&rounds, &unw, &after, 20).expect("witnessed");
        // The NaN sample is left out: four samples, medians of 2000/2020/1980/2040 µs; the
        // second round's waits after the end are one short and left out.
        assert_eq!(w.samples, 4);
        assert_eq!(w.unwitnessed_us, 56.5);
        assert_eq!(w.sample_us, 2010.0);
        assert_eq!(w.after_end_us, Some(310.0));
        // A round whose lists differ is left out; nothing witnessed is none.
        let w = SideWitness::of(&rounds, &[vec![1.0], vec![2.0, 3.0]], &[], 1).expect("one round");
        assert_eq!((w.samples, w.after_end_us), (1, None));
        assert_eq!(SideWitness::of(&rounds, &[], &after, 20), None);
        assert_eq!(SideWitness::of(&rounds, &[vec![], vec![]], &[], 20), None);
    }

    #[test]
    fn time_taken_out_of_one_sides_record_is_found_and_that_side_named() {
        let honest = side(8, 20, || 55.0);
        // 3% of a 2 ms sample taken out of each record: 60 µs more unwitnessed.
        let forged = side(8, 20, || 115.0);
        let why = judge([
            ("base", witness(&honest, 20)),
            ("candidate", witness(&forged, 20)),
        ])
        .expect("found");
        assert!(
            why.starts_with(
                "the host's clock saw 60 µs (3.0% of a sample) more of the candidate's timed samples than their events did, beyond the base's"
            ) && why.contains("at most 30 µs")
                && why.contains("the candidate's timing record may have been made shorter, or the base's longer"),
            "{why}"
        );
        // Either side: the base can be the one under test (`--base-kernels`).
        let why = judge([
            ("base", witness(&forged, 20)),
            ("candidate", witness(&honest, 20)),
        ])
        .expect("found");
        assert!(
            why.contains("more of the base's timed samples")
                && why.contains(
                    "the base's timing record may have been made shorter, or the candidate's longer"
                ),
            "{why}"
        );
        // Just inside the limit is not judged; long samples get a limit of their share.
        let slight = side(8, 20, || 55.0 + FLOOR_US - 0.5);
        assert_eq!(
            judge([
                ("base", witness(&honest, 20)),
                ("candidate", witness(&slight, 20))
            ]),
            None
        );
        let long = |u| side(8, 1, move || u);
        // A 2 ms sample: the floor (30 µs) is the limit; 40 µs more is judged.
        assert!(
            judge([
                ("base", witness(&long(55.0), 1)),
                ("candidate", witness(&long(95.0), 1))
            ])
            .is_some()
        );
        assert_eq!(limit_us(4000.0), 60.0);
    }

    #[test]
    fn a_side_alone_is_judged_against_the_control_either_way() {
        let control = witness(&side(4, 20, || 55.0), 20);
        let honest = witness(&side(8, 20, || 57.0), 20);
        assert_eq!(judge_alone("candidate", honest, control), None);
        // Twice the pair's limit: 60 µs for 2 ms samples.
        let within = witness(&side(8, 20, || 55.0 + 59.0), 20);
        assert_eq!(judge_alone("candidate", within, control), None);
        let shortened = witness(&side(8, 20, || 135.0), 20);
        let why = judge_alone("candidate", shortened, control).expect("found");
        assert!(
            why.starts_with("the host's clock saw 80 µs (4.0% of a sample) more of the candidate's timed samples than their events did, against the harness's own spin")
                && why.contains("at most 60 µs")
                && why.contains("the candidate's timing record may have been made shorter"),
            "{why}"
        );
        // A record made longer (less unwitnessed than the spin itself): judged too.
        let lengthened = witness(&side(8, 20, || -10.0), 20);
        let why = judge_alone("candidate", lengthened, control).expect("found");
        assert!(
            why.contains("65 µs (3.2% of a sample) less") && why.contains("made longer"),
            "{why}"
        );
        // No control, or too few samples: nothing judged.
        assert_eq!(judge_alone("candidate", shortened, None), None);
        let few = witness(&side(3, 20, || 55.0), 20);
        assert_eq!(judge_alone("candidate", shortened, few), None);
    }

    #[test]
    fn what_the_results_record_is_judged_as_the_samples_were() {
        let honest = witness(&side(8, 20, || 55.0), 20).unwrap();
        let forged = witness(&side(8, 20, || 115.0), 20).unwrap();
        let control = witness(&side(4, 20, || 55.0), 20).unwrap();
        let pair = |b, c| judge([("base", Some(b)), ("candidate", Some(c))]);
        let u = record(forged, Some(honest), None);
        assert_eq!((u.samples, u.limit_us, u.sample_us), (80, 30.0, 2000.0));
        assert_eq!(judge_recorded(&u), pair(honest, forged));
        assert!(judge_recorded(&u).is_some());
        assert_eq!(judge_recorded(&record(honest, Some(honest), None)), None);
        // Alone: against the control, whose 40 samples are the fewest.
        let u = record(forged, None, Some(control));
        assert_eq!(u.samples, 40);
        assert_eq!(
            judge_recorded(&u),
            judge_alone("candidate", Some(forged), Some(control))
        );
        let u = record(
            witness(&side(8, 20, || 135.0), 20).unwrap(),
            None,
            Some(control),
        );
        assert!(judge_recorded(&u).is_some());
        // Neither a base nor a control: nothing to judge against.
        assert_eq!(judge_recorded(&record(forged, None, None)), None);
    }

    /// The start moved later and the end's completion written early by as much: the host
    /// wakes early, so the lead-in test sees nothing; the wait for the checks after the end
    /// is longer by that much, and that is judged.
    #[test]
    fn an_end_seen_early_shows_as_a_longer_wait_for_the_checks() {
        let honest = side(8, 20, || 55.0);
        let mut early = side(8, 20, || 55.0);
        early.2 = vec![vec![400.0; 10]; 8];
        let (b, c) = (witness(&honest, 20), witness(&early, 20));
        let why = judge([("base", b), ("candidate", c)]).expect("found");
        assert!(
            why.starts_with("the host waited 100 µs longer from the candidate's end event to the end of its checks than from the base's")
                && why.contains("at most 60 µs")
                && why.contains("the candidate's end event may have been signalled before its replay ended"),
            "{why}"
        );
        // Within twice the limit, or one side without the waits recorded: nothing judged.
        early.2 = vec![vec![359.0; 10]; 8];
        assert_eq!(
            judge([("base", b), ("candidate", witness(&early, 20))]),
            None
        );
        early.2 = Vec::new();
        early.2.resize(8, vec![400.0; 9]);
        assert_eq!(
            judge([("base", b), ("candidate", witness(&early, 20))]),
            None
        );
        // And it is judged from what the results record.
        early.2 = vec![vec![400.0; 10]; 8];
        let u = record(witness(&early, 20).unwrap(), b, None);
        assert_eq!(u.candidate_after_end_us, Some(400.0));
        assert!(judge_recorded(&u).is_some_and(|w| w.contains("end event may have been")));
    }

    #[test]
    fn nothing_is_judged_without_both_sides_and_enough_samples() {
        let honest = side(8, 20, || 55.0);
        let forged = side(8, 20, || 500.0);
        assert_eq!(
            judge([("base", None), ("candidate", witness(&forged, 20))]),
            None
        );
        assert_eq!(
            judge([("base", witness(&honest, 20)), ("candidate", None)]),
            None
        );
        // Three rounds of 10 samples: fewer than MIN_SAMPLES.
        let few = side(3, 20, || 500.0);
        assert_eq!(
            judge([
                ("base", witness(&honest, 20)),
                ("candidate", witness(&few, 20))
            ]),
            None
        );
    }

    /// A seeded simulation of honest sides under a noise model harsher than a quiet host's
    /// (lead-in and wake-up of 55 µs with a 5 µs spread, a tenth of the samples delayed by a
    /// host stall of up to 400 µs, one side's stalls twice as frequent as the other's in
    /// half the shapes): no shape judged in 2,000; the same shapes with 2% of each sample
    /// taken out of one side's record (40 µs): every one judged.
    #[test]
    fn honest_noise_is_never_judged_and_a_two_percent_forgery_always_is() {
        let mut rng = ChaCha8Rng::seed_from_u64(20261205);
        let mut false_alarms = 0;
        let mut missed = 0;
        for shape in 0..2000 {
            let stalls = [0.1, if shape % 2 == 0 { 0.1 } else { 0.2 }];
            let draw = |stall: f64, rng: &mut ChaCha8Rng| {
                let spread: f64 = (0..4).map(|_| rng.random_range(-2.5..2.5)).sum();
                let stalled = rng.random_bool(stall);
                55.0 + spread
                    + if stalled {
                        rng.random_range(0.0..400.0)
                    } else {
                        0.0
                    }
            };
            let base = side(8, 20, || draw(stalls[0], &mut rng));
            let cand = side(8, 20, || draw(stalls[1], &mut rng));
            if judge([
                ("base", witness(&base, 20)),
                ("candidate", witness(&cand, 20)),
            ])
            .is_some()
            {
                false_alarms += 1;
            }
            let forged = (
                cand.0.clone(),
                cand.1
                    .iter()
                    .map(|r| r.iter().map(|u| u + 40.0).collect())
                    .collect(),
                cand.2.clone(),
            );
            if judge([
                ("base", witness(&base, 20)),
                ("candidate", witness(&forged, 20)),
            ])
            .is_none()
            {
                missed += 1;
            }
        }
        assert_eq!((false_alarms, missed), (0, 0));
    }
}
