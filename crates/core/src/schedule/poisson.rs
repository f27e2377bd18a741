//! The points of a unit-rate Poisson process, drawn from a seed so that
//! any of them can be found again on any thread, process or machine.
//!
//! Point k is the sum of k + 1 independent exponential gaps. Summing from
//! the start would make every thread walk every gap, and counting the
//! points before an instant (what the reports need at the end of a run)
//! would walk millions. Instead the gaps are drawn top down: the run is cut
//! into chunks of [`CHUNK`] gaps whose sums (Gamma-distributed) are drawn
//! once, a chunk into [`BLOCK`]s by a Dirichlet split (independent Gamma
//! draws, normalised), and a block into its gaps (exponential draws,
//! normalised). For independent exponential gaps the sum of a group and
//! the shares of its parts are independent, with exactly these laws, so
//! the points have the Poisson process's law while any one of them costs
//! two bounded expansions. Each expansion draws from a generator seeded by
//! the seed and the chunk's or block's number, nothing else.

use std::sync::Arc;

use rand::SeedableRng;
use rand_distr::{Distribution, Exp1, Gamma};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Gaps in a block, and blocks in a chunk.
const FANOUT: usize = 1 << 12;
/// Gaps in a block.
pub const BLOCK: u64 = FANOUT as u64;
/// Gaps in a chunk: 2^24.
pub const CHUNK: u64 = BLOCK * FANOUT as u64;

/// The chunks' sums, drawn once for a run: point `k` of chunk `c` lies in
/// `[starts[c], starts[c + 1]]`.
#[derive(Debug)]
pub struct PoissonPoints {
    seed: u64,
    starts: Vec<f64>,
}

impl PoissonPoints {
    /// The points up to at least `horizon` (the profile's integral over
    /// the run): chunks are drawn until their sum passes it, so a run of a
    /// day at a million requests a second draws about 5,000.
    pub fn new(seed: u64, horizon: f64) -> PoissonPoints {
        let mut starts = vec![0.0];
        let gamma = Gamma::new(CHUNK as f64, 1.0).expect("positive shape");
        let mut at = 0.0;
        // A NaN or infinite horizon (never for a run, which is bounded)
        // still ends: at most 2^24 chunks.
        while at.partial_cmp(&horizon) != Some(std::cmp::Ordering::Greater)
            && starts.len() <= 1 << 24
        {
            at += gamma.sample(&mut rng(seed, 0, starts.len() as u64 - 1));
            starts.push(at);
        }
        PoissonPoints { seed, starts }
    }

    /// Points available: past them the process has left the run.
    fn count(&self) -> u64 {
        (self.starts.len() as u64 - 1) * CHUNK
    }
}

/// A generator for one node of the tree: the chunk sums (level 0), a
/// chunk's split (level 1) or a block's gaps (level 2).
fn rng(seed: u64, level: u64, index: u64) -> Xoshiro256PlusPlus {
    let key = splitmix(splitmix(seed ^ level.wrapping_mul(0xA076_1D64_78BD_642F)) ^ index);
    Xoshiro256PlusPlus::seed_from_u64(key)
}

/// SplitMix64's finaliser: neighbouring keys give unrelated seeds.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `out` with the `FANOUT + 1` boundaries of `[lo, hi]` cut in the
/// proportions of `FANOUT` independent draws, ending exactly at `hi`.
fn split(lo: f64, hi: f64, draws: impl Iterator<Item = f64>, out: &mut Vec<f64>) {
    out.clear();
    out.push(0.0);
    let mut sum = 0.0;
    for d in draws.take(FANOUT) {
        sum += d;
        out.push(sum);
    }
    let width = hi - lo;
    for b in out.iter_mut() {
        // Clamped so that rounding never moves a point out of its parent.
        *b = (lo + width * (*b / sum)).clamp(lo, hi);
    }
    out[FANOUT] = hi;
}

/// One lane's view of the points, with the chunk split and the block of
/// gaps it last expanded: a lane moving forward expands each once.
#[derive(Debug)]
pub struct PointCursor {
    points: Arc<PoissonPoints>,
    /// The chunk whose split is in `blocks`, and the block whose points
    /// are in `gaps` (its `FANOUT + 1` boundaries).
    chunk: Option<u64>,
    blocks: Vec<f64>,
    block: Option<u64>,
    gaps: Vec<f64>,
}

impl Clone for PointCursor {
    fn clone(&self) -> Self {
        PointCursor::new(self.points.clone())
    }
}

impl PointCursor {
    pub fn new(points: Arc<PoissonPoints>) -> PointCursor {
        PointCursor {
            points,
            chunk: None,
            blocks: Vec::with_capacity(FANOUT + 1),
            block: None,
            gaps: Vec::with_capacity(FANOUT + 1),
        }
    }

    /// Point `k` (k = 0, 1, …): the sum of gaps 0 to k. Infinite past the
    /// points drawn for the run.
    pub fn point(&mut self, k: u64) -> f64 {
        if k >= self.points.count() {
            return f64::INFINITY;
        }
        self.expand(k / BLOCK);
        self.gaps[(k % BLOCK) as usize + 1]
    }

    /// How many points lie below `x`.
    pub fn count_below(&mut self, x: f64) -> u64 {
        let starts = &self.points.starts;
        // NaN included: no point lies below it.
        if x.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return 0;
        }
        let c = starts.partition_point(|&s| s < x) as u64;
        if c > self.points.count() / CHUNK {
            return self.points.count();
        }
        let chunk = c - 1;
        self.split_chunk(chunk);
        let b = self.blocks.partition_point(|&s| s < x) as u64 - 1;
        let block = chunk * FANOUT as u64 + b.min(FANOUT as u64 - 1);
        self.expand(block);
        // gaps[i + 1] is point i of the block; gaps[0] its start.
        let i = self.gaps[1..].partition_point(|&p| p < x) as u64;
        block * BLOCK + i
    }

    /// Draws chunk `c`'s split into blocks, unless it is the one held.
    fn split_chunk(&mut self, c: u64) {
        if self.chunk == Some(c) {
            return;
        }
        let (lo, hi) = (
            self.points.starts[c as usize],
            self.points.starts[c as usize + 1],
        );
        let gamma = Gamma::new(BLOCK as f64, 1.0).expect("positive shape");
        let mut g = rng(self.points.seed, 1, c);
        split(
            lo,
            hi,
            std::iter::repeat_with(|| gamma.sample(&mut g)),
            &mut self.blocks,
        );
        self.chunk = Some(c);
    }

    /// Draws block `b`'s gaps, unless it is the one held.
    fn expand(&mut self, b: u64) {
        if self.block == Some(b) {
            return;
        }
        let c = b / FANOUT as u64;
        self.split_chunk(c);
        let i = (b % FANOUT as u64) as usize;
        let (lo, hi) = (self.blocks[i], self.blocks[i + 1]);
        let mut g = rng(self.points.seed, 2, b);
        let draws = std::iter::repeat_with(|| -> f64 { Exp1.sample(&mut g) });
        split(lo, hi, draws, &mut self.gaps);
        self.block = Some(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(seed: u64, horizon: f64) -> PointCursor {
        PointCursor::new(Arc::new(PoissonPoints::new(seed, horizon)))
    }

    #[test]
    fn gaps_are_exponential_with_mean_one() {
        let mut c = cursor(7, 3e5);
        let n = 200_000u64;
        let gaps: Vec<f64> = (1..n).map(|k| c.point(k) - c.point(k - 1)).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!((mean - 1.0).abs() < 0.01, "mean {mean}");
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
        // P(gap > 1) = e^-1 for an exponential law.
        let over = gaps.iter().filter(|&&g| g > 1.0).count() as f64 / gaps.len() as f64;
        assert!((over - (-1.0f64).exp()).abs() < 0.01, "{over}");
    }

    #[test]
    fn the_same_seed_gives_the_same_points_in_any_order() {
        let mut a = cursor(42, 1e8);
        let mut b = cursor(42, 1e8);
        let ks = [
            0,
            5,
            4095,
            4096,
            70_000_001,
            3,
            CHUNK - 1,
            CHUNK,
            2 * CHUNK + 17,
        ];
        let forward: Vec<f64> = ks.iter().map(|&k| a.point(k)).collect();
        let backward: Vec<f64> = ks.iter().rev().map(|&k| b.point(k)).collect();
        assert!(forward.iter().eq(backward.iter().rev()));
        assert_ne!(cursor(43, 1e8).point(5), forward[1]);
    }

    #[test]
    fn points_increase_across_blocks_and_chunks() {
        let mut c = cursor(1, 1e8);
        for base in [0, BLOCK - 3, CHUNK - 3, 3 * CHUNK - 3] {
            for k in base..base + 6 {
                assert!(c.point(k + 1) >= c.point(k), "{k}");
            }
        }
        // A chunk's points spread like a Gamma(2^24) sum: within a few
        // standard deviations (2^12) of 2^24 per chunk.
        let chunk_sum = c.point(CHUNK - 1);
        assert!(
            (chunk_sum - CHUNK as f64).abs() < 8.0 * BLOCK as f64,
            "{chunk_sum}"
        );
    }

    #[test]
    fn counting_agrees_with_the_points() {
        let mut c = cursor(9, 5e7);
        for x in [
            0.0,
            0.5,
            10.0,
            4096.3,
            1e6 + 0.25,
            CHUNK as f64 + 3.3,
            4.9e7,
        ] {
            let n = c.count_below(x);
            assert!(n == 0 || c.point(n - 1) < x, "{x}: {n}");
            assert!(c.point(n) >= x, "{x}: {n}");
        }
        // Past the points drawn for the run, all of them count.
        let all = c.count_below(f64::INFINITY);
        assert_eq!(c.point(all), f64::INFINITY);
        assert!(c.point(all - 1).is_finite());
    }
}
