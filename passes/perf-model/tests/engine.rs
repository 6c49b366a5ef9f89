//! The net engine and the SM model against small nets whose runs are
//! computed by hand (each test says how).

#![allow(clippy::unwrap_used)]

use pgpu_perf_model::{
    Mix, Net, Simulation, SmModel, StepLimit,
    calibration::{Calibration, spearman},
    dot::to_dot,
    gpu::{Device, Estimator, Launch, LaunchCount, WarmLaunches},
    text::{parse, print},
};

fn run(net: &Net, seed: u64) -> pgpu_perf_model::Outcome {
    Simulation::new(net, seed)
        .run(StepLimit(10_000))
        .expect("the net dies")
}

#[test]
fn a_chain_fires_one_transition_per_step() {
    // a -> t1 -> b -> t2 -> c: two steps, the token ends in c.
    let net =
        parse("place a = 1\nplace b\nplace c\ntransition t1: a -> b\ntransition t2: b -> c\n")
            .unwrap();
    let outcome = run(&net, 1);
    assert_eq!((outcome.steps, outcome.firings), (2, 2));
    assert_eq!(outcome.marking, vec![0, 0, 1]);
}

#[test]
fn independent_transitions_fire_in_the_same_step() {
    // Three tokens, three transitions each taking one: one maximal step.
    let net = parse(
        "place a = 3\nplace b\ntransition x: a -> b\ntransition y: a -> b\ntransition z: a -> b\n",
    )
    .unwrap();
    let outcome = run(&net, 7);
    assert_eq!((outcome.steps, outcome.firings), (1, 3));
    assert_eq!(outcome.marking, vec![0, 3]);
}

#[test]
fn a_transition_fires_at_most_once_per_step() {
    // A step is a set: t takes one of 3 tokens per step, so 3 steps.
    let net = parse("place a = 3\nplace b\ntransition t: a -> b\n").unwrap();
    let outcome = run(&net, 3);
    assert_eq!((outcome.steps, outcome.firings), (3, 3));
}

#[test]
fn conflicts_go_to_one_side_chosen_by_the_seed() {
    // One token, two consumers: exactly one fires; over seeds both win.
    let net = parse(
        "place a = 1\nplace left\nplace right\ntransition l: a -> left\ntransition r: a -> right\n",
    )
    .unwrap();
    let mut winners = [0; 2];
    for seed in 0..64 {
        let outcome = run(&net, seed);
        assert_eq!((outcome.steps, outcome.firings), (1, 1));
        assert_eq!(outcome.marking[1] + outcome.marking[2], 1);
        winners[outcome.marking[1] as usize] += 1;
        // The same seed gives the same run.
        assert_eq!(run(&net, seed).marking, outcome.marking);
    }
    assert!(winners[0] > 10 && winners[1] > 10, "{winners:?}");
}

#[test]
fn weights_take_and_put_several_tokens() {
    // t: a*2 -> b*3 with a = 5: fires at steps 1 and 2 (5 -> 3 -> 1),
    // then a holds 1 < 2.
    let net = parse("place a = 5\nplace b\ntransition t: a*2 -> b*3\n").unwrap();
    let outcome = run(&net, 0);
    assert_eq!(outcome.steps, 2);
    assert_eq!(outcome.marking, vec![1, 6]);
}

#[test]
fn inhibitors_test_the_marking_at_the_start_of_the_step() {
    // drain empties `gate` in step 1, but `go` (inhibited by gate) sees
    // the step's starting marking: it fires in step 2 only.
    let net = parse(
        "place gate = 1\nplace start = 1\nplace done\n\
         transition drain: gate ->\ntransition go: start -> done | gate\n",
    )
    .unwrap();
    let mut steps_of_go = Vec::new();
    let go = net.transition_named("go").unwrap();
    let outcome = Simulation::new(&net, 5)
        .run_observed(StepLimit(100), |step, fired| {
            if fired.contains(&go) {
                steps_of_go.push(step);
            }
        })
        .unwrap();
    assert_eq!(outcome.steps, 2);
    assert_eq!(steps_of_go, vec![2]);
}

#[test]
fn tokens_produced_in_a_step_are_used_from_the_next() {
    // t1: a -> b and t2: b -> c with a = 1, b = 1: both fire in step 1
    // (t2 on the old token of b), t2 again in step 2.
    let net =
        parse("place a = 1\nplace b = 1\nplace c\ntransition t1: a -> b\ntransition t2: b -> c\n")
            .unwrap();
    let outcome = run(&net, 9);
    assert_eq!((outcome.steps, outcome.firings), (2, 3));
    assert_eq!(outcome.marking, vec![0, 0, 2]);
}

#[test]
fn the_step_limit_stops_a_live_net() {
    let net = parse("place a = 1\ntransition loop: a -> a\n").unwrap();
    let error = Simulation::new(&net, 0).run(StepLimit(50)).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no dead marking within 50 steps")
    );
}

#[test]
fn step_enabledness_sums_the_entries() {
    let net = parse("place a = 1\nplace b\ntransition x: a -> b\ntransition y: a -> b\n").unwrap();
    let (x, y) = (
        net.transition_named("x").unwrap(),
        net.transition_named("y").unwrap(),
    );
    let marking = net.initial_marking();
    assert!(net.is_step_enabled(&[x], &marking));
    assert!(!net.is_step_enabled(&[x, y], &marking));
    assert_eq!(net.execute_step(&[x], &marking), vec![0, 1]);
}

#[test]
fn the_text_format_round_trips_and_reports_spans() {
    let text = "place p0 = 4\nplace p1\nplace p2 = 1\n\
                transition t: p0*2, p2 -> p1 | p1\ntransition s: -> p1\ntransition u: p1 ->\nidle t\n";
    let net = parse(text).unwrap();
    assert_eq!(print(&net), text);
    let error = parse("place a\ntransition t: a -> nowhere\n").unwrap_err();
    assert!(error.message.contains("no place named 'nowhere'"));
    assert_eq!(error.span, (27, 34));
    let error = parse("place a\nplace a\n").unwrap_err();
    assert!(error.message.contains("already exists"));
    let error = parse("transition t: -> \nplace x = many\n").unwrap_err();
    assert!(error.message.contains("initial number of tokens"));
    assert!(parse("place a\ntransition t: a*0 ->\n").is_err());
    assert!(parse("place a\ntransition t a ->\n").is_err());
    assert!(parse("idle t\n").is_err());
}

/// `warps` warps of `mix` on an SM with one scheduler.
fn one_scheduler(warps: u64, mix: Mix, seed: u64) -> pgpu_perf_model::Outcome {
    SmModel {
        schedulers: 1,
        ..SmModel::default()
    }
    .simulate(warps, mix, seed)
    .unwrap()
}

/// One warp, one scheduler, one arithmetic instruction: t2 (select), t1
/// (issue), t7, t15, then t16 (end) = 5 steps; t0 never fires (a
/// scheduler is free only when p2 is marked).
#[test]
fn one_arithmetic_instruction_takes_five_steps() {
    let arithmetic = |n| Mix {
        arithmetic: n,
        ..Mix::default()
    };
    let one = one_scheduler(1, arithmetic(1), 0);
    assert_eq!((one.steps, one.idle_steps), (5, 0));
    // Each further arithmetic instruction adds its 4 steps (t2 t1 t7 t15).
    let three = one_scheduler(1, arithmetic(3), 0);
    assert_eq!((three.steps, three.idle_steps), (13, 0));
}

/// One global access with l1 = 20: t4, t1, t5 (scheduler back), 20 steps
/// of t8, t9, t11, t16 = 26 steps. t0 fires from step 4 (the scheduler
/// returned by t5 in step 3, p2 empty) to step 25 (t11 marks p2 at its
/// end): 22 idle steps.
#[test]
fn one_global_access_waits_l1_steps_idle() {
    let global = Mix {
        global: 1,
        ..Mix::default()
    };
    let outcome = one_scheduler(1, global, 0);
    assert_eq!((outcome.steps, outcome.idle_steps), (26, 22));
    assert_eq!(
        outcome.marking.iter().sum::<u64>(),
        1,
        "only the SM token is left"
    );
}

/// Two warps of one global access each (l1 = 20, 4 schedulers): in the
/// paper's net both accesses overlap (26 steps, as one warp's); with one
/// memory slot the second t5 waits for the first t9 (step 24), fires at
/// step 25 and its warp ends 23 steps later: 48 steps.
#[test]
fn memory_slots_serialize_global_accesses() {
    let global = Mix {
        global: 1,
        ..Mix::default()
    };
    let with = |slots: Option<u64>| {
        SmModel {
            memory_slots: slots,
            ..SmModel::default()
        }
        .simulate(2, global, 0)
        .unwrap()
        .steps
    };
    assert_eq!(with(None), 26);
    assert_eq!(with(Some(2)), 26);
    assert_eq!(with(Some(1)), 48);
    // The net has the place and its arcs.
    let net = SmModel {
        memory_slots: Some(3),
        ..SmModel::default()
    }
    .net(&[global])
    .unwrap();
    let text = pgpu_perf_model::text::print(&net);
    assert!(text.contains("place memory = 3"), "{text}");
}

/// One shared access with l2 = 2 holds the scheduler: t3, t1, t6, t17
/// twice, t12, t14, t16 = 8 steps, never idle.
#[test]
fn one_shared_access_holds_the_scheduler() {
    let shared = Mix {
        shared: 1,
        ..Mix::default()
    };
    let outcome = one_scheduler(1, shared, 0);
    assert_eq!((outcome.steps, outcome.idle_steps), (8, 0));
}

/// Two warps, one global access each, one scheduler: both select in step
/// 1; one issues in step 2 and the other in step 4 (the scheduler is back
/// after t5 in step 3); the second finishes 2 steps after the first:
/// 28 steps.
#[test]
fn a_second_warp_hides_most_of_the_latency() {
    let global = Mix {
        global: 1,
        ..Mix::default()
    };
    for seed in 0..8 {
        let outcome = one_scheduler(2, global, seed);
        assert_eq!(outcome.steps, 28, "seed {seed}");
        // Idle from step 6 (both issued, scheduler back after step 5) to
        // step 25 (the first warp's t11 marks its p2 at the step's end),
        // and in step 27, after the first warp ended in step 26 while the
        // second one's t11 runs: 21 idle steps.
        assert_eq!(outcome.idle_steps, 21, "seed {seed}");
    }
}

#[test]
fn the_warp_part_has_the_figures_places_and_transitions() {
    let net = SmModel::default().net(&[Mix::default(); 2]).unwrap();
    // p0, running, t0, and per warp 18 places and the 15 drawn transitions.
    assert_eq!(net.places().len(), 2 + 2 * 18);
    assert_eq!(net.transitions().len(), 1 + 2 * 15);
    let t0 = net.transition(net.transition_named("t0").unwrap());
    assert_eq!(t0.inhibitors.len(), 2);
    assert!(net.transition_named("w1.t17").is_some());
    assert!(net.transition_named("w0.t10").is_none());
    // The written net reads back as the same net.
    assert_eq!(parse(&print(&net)).unwrap(), net);
    let dot = to_dot(&net, "sm");
    assert!(dot.contains("subgraph \"cluster_w1\""));
    assert!(dot.contains("\"w0.p2\" -> \"t0\" [arrowhead=odot];"));
    assert!(dot.contains("\"w0.t5\" -> \"w0.p12\" [label=\"21\"];"));
}

#[test]
fn more_warps_hide_latency_until_the_schedulers_saturate() {
    let model = SmModel::default();
    let mix = Mix {
        arithmetic: 8,
        shared: 0,
        global: 4,
    };
    let steps: Vec<u64> = [1, 4, 16, 64]
        .iter()
        .map(|&w| model.simulate(w, mix, 1).unwrap().steps)
        .collect();
    // Steps grow sublinearly in the warps: 64 warps take far less than
    // 64 times one warp, and never less than one warp alone.
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
    assert!(steps[3] < 16 * steps[0], "{steps:?}");
    let idle = |w| model.simulate(w, mix, 1).unwrap().idle_share();
    assert!(idle(64) < idle(1));
}

#[test]
fn kernels_spread_blocks_over_multiprocessors_in_rounds() {
    let device = Device {
        multiprocessors: 2,
        ..Device::default()
    };
    let mut estimator = Estimator::new(device, 1);
    let mix = Mix {
        arithmetic: 2,
        shared: 0,
        global: 1,
    };
    // 4096 threads in blocks of 256 = 16 blocks, 8 per SM; 8 warps per
    // block, 8 blocks of 8 warps fit at once (64 warps): one round.
    let one = estimator
        .kernel(
            Launch {
                threads: 4096,
                block: 256,
            },
            mix,
        )
        .unwrap();
    assert_eq!((one.warps, one.warps_per_sm, one.rounds), (128, 64, 1));
    assert_eq!(one.steps, estimator.sm(64, mix).unwrap().steps);
    // 5000 threads: 20 blocks, 10 on the busiest SM: a round of 8 and one
    // of 2.
    let two = estimator
        .kernel(
            Launch {
                threads: 5000,
                block: 256,
            },
            mix,
        )
        .unwrap();
    assert_eq!(two.rounds, 2);
    let expected = estimator.sm(64, mix).unwrap().steps + estimator.sm(16, mix).unwrap().steps;
    assert_eq!(two.steps, expected);
    // 40 threads: one block of 2 warps.
    let small = estimator
        .kernel(
            Launch {
                threads: 40,
                block: 256,
            },
            mix,
        )
        .unwrap();
    assert_eq!((small.warps, small.warps_per_sm), (2, 2));
    assert!(
        estimator
            .kernel(
                Launch {
                    threads: 0,
                    block: 256
                },
                mix
            )
            .is_err()
    );
}

#[test]
fn calibration_fits_a_line_and_reads_back() {
    // seconds = 2e-9 * steps + 1e-6 exactly.
    let measurements: Vec<(f64, f64)> = [100.0, 1000.0, 5000.0, 20000.0]
        .iter()
        .map(|&s| (s, 2e-9 * s + 1e-6))
        .collect();
    let fit = Calibration::fit("test device", &measurements).unwrap();
    assert!((fit.seconds_per_step - 2e-9).abs() < 1e-15);
    assert!((fit.launch_seconds - 1e-6).abs() < 1e-12);
    assert!((fit.spearman - 1.0).abs() < 1e-12);
    let back = Calibration::parse(&fit.print()).unwrap();
    assert_eq!(back.device, "test device");
    assert!((back.seconds(1000) - 3e-6).abs() < 1e-12);
    assert_eq!((back.global_latency, back.shared_latency), (None, None));
    // The latencies the steps were predicted with read back.
    let with_latencies = Calibration {
        global_latency: Some(400),
        shared_latency: Some(8),
        ..fit
    };
    let back = Calibration::parse(&with_latencies.print()).unwrap();
    assert_eq!(
        (back.global_latency, back.shared_latency),
        (Some(400), Some(8))
    );
    assert_eq!(back.warm_global_latency, None);
    let warm = Calibration {
        warm_global_latency: Some(100),
        ..with_latencies
    };
    assert!(warm.print().contains("warm_global_latency = 100\n"));
    assert_eq!(
        Calibration::parse(&warm.print())
            .unwrap()
            .warm_global_latency,
        Some(100)
    );
    assert!(
        Calibration::parse(
            "device = x
seconds_per_step = 1
global_latency = 2.5
"
        )
        .is_err()
    );
    assert!(Calibration::fit("d", &[(1.0, 1.0)]).is_err());
    assert!(Calibration::parse("device = x\nseconds_per_step = -1\n").is_err());
    assert!(Calibration::parse("seconds_per_step = 1\n").is_err());
    // Reversed order: rank correlation -1.
    assert!((spearman(&[(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)]) + 1.0).abs() < 1e-12);
}

/// Repeated conflict-free steps executed at once (`Simulation::run`) give
/// the outcome of the same run step by step: SM nets of every kind of mix,
/// warp count and latency, several seeds; and a net with inhibitors and
/// weights whose repeated steps end by a transition becoming enabled
/// (a countdown that an inhibitor arc watches).
#[test]
fn repeated_steps_at_once_match_step_by_step() {
    let mixes = [
        Mix {
            arithmetic: 3,
            shared: 0,
            global: 5,
        },
        Mix {
            arithmetic: 0,
            shared: 4,
            global: 2,
        },
        Mix {
            arithmetic: 20,
            shared: 3,
            global: 1,
        },
        Mix {
            arithmetic: 1,
            shared: 0,
            global: 0,
        },
    ];
    for (latency, shared_latency) in [(0, 0), (20, 2), (137, 9), (400, 2)] {
        let model = SmModel {
            schedulers: 4,
            global_latency: latency,
            shared_latency,
            memory_slots: None,
        };
        for mix in mixes {
            for warps in [1, 3, 17] {
                let net = model.net(&vec![mix; warps]).unwrap();
                for seed in 0..3 {
                    let at_once = Simulation::new(&net, seed).run(StepLimit(1 << 24)).unwrap();
                    let one_by_one = Simulation::new(&net, seed)
                        .run_step_by_step(StepLimit(1 << 24))
                        .unwrap();
                    assert_eq!(
                        at_once, one_by_one,
                        "l1 {latency}, {mix:?}, {warps} warps, seed {seed}"
                    );
                }
            }
        }
    }
    // count*7 drains by 2 a step (t: count*2 -> sink); `done` waits on the
    // inhibitor `count` and can fire only after it is empty; odd counts
    // never empty (count 1 is left, t dead), so `done` never fires.
    for tokens in [6, 7, 40] {
        let text = format!(
            "place count = {tokens}\nplace sink\nplace go = 1\nplace out\n\
             transition t: count*2 -> sink\ntransition done: go -> out | count\n"
        );
        let net = parse(&text).unwrap();
        let at_once = Simulation::new(&net, 1).run(StepLimit(1000)).unwrap();
        let one_by_one = Simulation::new(&net, 1)
            .run_step_by_step(StepLimit(1000))
            .unwrap();
        assert_eq!(at_once, one_by_one, "{tokens} tokens");
        assert_eq!(at_once.steps, tokens / 2 + u64::from(tokens % 2 == 0));
    }
    // A live net still hits the step limit, at the same step.
    let net = parse("place a = 1\ntransition loop: a -> a\n").unwrap();
    let error = Simulation::new(&net, 0).run(StepLimit(500)).unwrap_err();
    assert_eq!(
        error,
        Simulation::new(&net, 0)
            .run_step_by_step(StepLimit(500))
            .unwrap_err()
    );
}

#[test]
fn warm_launches_average_one_cold_launch_with_warm_ones() {
    // One thread of one global access: t4, t1, t5, l1 x t8, t9, t11, then
    // t16, so l1 + 6 steps: 406 cold (l1 = 400), 106 warm (100). Four
    // launches per run: (406 + 3 x 106) / 4 = 181 steps per launch.
    let device = Device {
        sm: SmModel {
            global_latency: 400,
            ..SmModel::default()
        },
        warm: Some(WarmLaunches {
            global_latency: 100,
            cache_bytes: 1000,
        }),
        ..Device::default()
    };
    let mut estimator = Estimator::new(device.clone(), 1);
    let launch = Launch {
        threads: 1,
        block: 1,
    };
    let mix = Mix {
        arithmetic: 0,
        shared: 0,
        global: 1,
    };
    let footprint = pgpu_perf_model::gpu::footprint(1, mix);
    assert_eq!(footprint, 4);
    let mut repeated =
        |count, working_set| estimator.repeated(launch, mix, count, working_set).unwrap();
    let four = repeated(LaunchCount::Known(4), Some(footprint));
    assert_eq!((four.steps, four.warm_steps), (181, Some(106)));
    // Launched once (or never), or with a working set beyond the cache or
    // unknown: every launch cold.
    for (count, working_set) in [
        (LaunchCount::Known(0), Some(footprint)),
        (LaunchCount::Known(1), Some(footprint)),
        (LaunchCount::Known(4), Some(1001)),
        (LaunchCount::Known(4), None),
    ] {
        let cold = repeated(count, working_set);
        assert_eq!((cold.steps, cold.warm_steps), (406, None));
    }
    // A working set of exactly the cache still fits.
    assert_eq!(repeated(LaunchCount::Known(4), Some(1000)).steps, 181);
    // An unknown count is many launches: all warm.
    let many = repeated(LaunchCount::Unknown, Some(footprint));
    assert_eq!((many.steps, many.warm_steps), (106, Some(106)));
    // Without warm launches, the paper's model: every launch waits l1.
    let mut paper = Estimator::new(
        Device {
            warm: None,
            ..device
        },
        1,
    );
    let cold = paper
        .repeated(launch, mix, LaunchCount::Known(4), Some(footprint))
        .unwrap();
    assert_eq!((cold.steps, cold.warm_steps), (406, None));
}
