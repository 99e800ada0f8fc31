//! Renders a synthetic worm swim and an arm push (with HAC subgoals) to GIF
//! and PNG, printing file sizes and timings:
//! `cargo run -p shoal-rl-eval --example render_tour [out_dir]`.

use std::time::Instant;

use shoal_rl_eval::{ArmFrameInput, ArmLayout, WormFrameInput, render_arm, render_worm};

fn main() -> shoal_rl_core::Result<()> {
    let out = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("shoal-render-tour"));

    // A 5-link worm (1 m links) swimming along +x with a travelling wave.
    let worm: Vec<WormFrameInput> = (0..300)
        .map(|t| {
            let t = t as f32;
            let outline = (0..6)
                .map(|j| {
                    let j = j as f32;
                    [0.02 * t - j, 0.35 * (0.25 * t - 1.1 * j).sin()]
                })
                .collect();
            WormFrameInput::new(outline)
        })
        .collect();
    let start = Instant::now();
    let (gif, png) = render_worm(&worm, out.join("worm.gif"))?;
    report(&gif, &png, worm.len(), start);

    // The gripper pushes the box from the table centre toward the goal; the
    // upper level of a hierarchical agent proposes a subgoal half way.
    let steps = 100;
    let arm: Vec<ArmFrameInput> = (0..steps)
        .map(|t| {
            let s = t as f32 / steps as f32;
            let push = (2.0 * s - 0.4).clamp(0.0, 1.0);
            ArmFrameInput {
                episode: 0,
                gripper: [
                    -0.05 + 0.17 * push,
                    0.05 * push,
                    0.43 + 0.05 * (1.0 - (2.5 * s).min(1.0)),
                ],
                object: [0.15 * push, 0.05 * push, 0.425],
                goal: [0.15, 0.05, 0.425],
                subgoals: vec![[0.08, 0.03, 0.425]],
            }
        })
        .collect();
    let start = Instant::now();
    let (gif, png) = render_arm(&ArmLayout::default(), &arm, out.join("push.gif"))?;
    report(&gif, &png, arm.len(), start);
    Ok(())
}

fn report(gif: &std::path::Path, png: &std::path::Path, steps: usize, start: Instant) {
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len() / 1024).unwrap_or(0);
    println!(
        "{steps} steps in {:.2} s: {} ({} KiB), {} ({} KiB)",
        start.elapsed().as_secs_f64(),
        gif.display(),
        size(gif),
        png.display(),
        size(png)
    );
}
