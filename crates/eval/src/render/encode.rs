//! Turning RGB frames into GIF and PNG bytes in memory, so files can be
//! written whole with `atomic_write`.

use std::borrow::Cow;
use std::collections::HashMap;

use super::scene::Rgb;

/// Levels per channel of the colour cube that fills the palette after the
/// scene's own colours.
const CUBE_LEVELS: [u8; 5] = [0, 64, 128, 191, 255];
/// Extra grey levels, so anti-aliased text on a light background stays smooth.
const GREY_STEPS: usize = 24;
/// Palette entries a GIF can hold.
const PALETTE_SIZE: usize = 256;

/// A 256-colour GIF palette: the colours the scene asks for, exactly, then
/// a colour cube and greys for anti-aliased edges and text. Each pixel maps
/// to its nearest entry; answers are memoised because a frame holds few
/// distinct colours.
pub(crate) struct Palette {
    colours: Vec<[u8; 3]>,
    cache: HashMap<[u8; 3], u8>,
}

impl Palette {
    /// A palette holding `key` colours exactly (as many as fit).
    pub(crate) fn new(key: impl IntoIterator<Item = Rgb>) -> Self {
        let reserved = CUBE_LEVELS.len().pow(3) + GREY_STEPS;
        let mut colours: Vec<[u8; 3]> = Vec::with_capacity(PALETTE_SIZE);
        for c in key {
            let c = [c.0, c.1, c.2];
            if colours.len() >= PALETTE_SIZE - reserved {
                break;
            }
            if !colours.contains(&c) {
                colours.push(c);
            }
        }
        for r in CUBE_LEVELS {
            for g in CUBE_LEVELS {
                for b in CUBE_LEVELS {
                    colours.push([r, g, b]);
                }
            }
        }
        for i in 1..=GREY_STEPS {
            let v = (i * 255 / (GREY_STEPS + 1)) as u8;
            colours.push([v, v, v]);
        }
        Palette {
            colours,
            cache: HashMap::new(),
        }
    }

    /// The palette as GIF wants it: 256 RGB triples.
    pub(crate) fn table(&self) -> Vec<u8> {
        let mut table: Vec<u8> = self.colours.iter().flatten().copied().collect();
        table.resize(PALETTE_SIZE * 3, 0);
        table
    }

    /// Index of the entry nearest `rgb`.
    pub(crate) fn index(&mut self, rgb: [u8; 3]) -> u8 {
        if let Some(&i) = self.cache.get(&rgb) {
            return i;
        }
        let distance = |c: &[u8; 3]| {
            let d = |k: usize| i32::from(c[k]) - i32::from(rgb[k]);
            // Rough perceptual weights: the eye is most sensitive to green.
            2 * d(0) * d(0) + 4 * d(1) * d(1) + 3 * d(2) * d(2)
        };
        let best = (0..self.colours.len())
            .min_by_key(|&i| distance(&self.colours[i]))
            .unwrap_or(0) as u8;
        self.cache.insert(rgb, best);
        best
    }

    /// Palette indices of an RGB buffer.
    pub(crate) fn indices(&mut self, rgb: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(rgb.len() / 3);
        let mut last: Option<([u8; 3], u8)> = None;
        for px in rgb.chunks_exact(3) {
            let px = [px[0], px[1], px[2]];
            let index = match last {
                Some((colour, index)) if colour == px => index,
                _ => self.index(px),
            };
            last = Some((px, index));
            out.push(index);
        }
        out
    }
}

/// An animated GIF being built in memory, looping forever.
pub(crate) struct GifBuilder {
    encoder: gif::Encoder<Vec<u8>>,
    palette: Palette,
    width: u16,
    height: u16,
    /// Palette indices of the picture as shown so far.
    previous: Option<Vec<u8>>,
}

impl GifBuilder {
    pub(crate) fn new(
        width: u16,
        height: u16,
        palette: Palette,
    ) -> Result<Self, gif::EncodingError> {
        let mut encoder = gif::Encoder::new(Vec::new(), width, height, &palette.table())?;
        encoder.set_repeat(gif::Repeat::Infinite)?;
        Ok(GifBuilder {
            encoder,
            palette,
            width,
            height,
            previous: None,
        })
    }

    /// Appends an RGB frame shown for `delay_cs` hundredths of a second.
    /// Only the rectangle that changed since the previous frame is stored
    /// (drawn over it, which GIF calls "keep"), so a mostly still scene
    /// costs little per frame.
    pub(crate) fn push(&mut self, rgb: &[u8], delay_cs: u16) -> Result<(), gif::EncodingError> {
        let indices = self.palette.indices(rgb);
        let (w, h) = (usize::from(self.width), usize::from(self.height));
        let (left, top, right, bottom) = match &self.previous {
            None => (0, 0, w, h),
            // An unchanged picture still needs a frame, for its delay: one pixel.
            Some(previous) => changed_rect(previous, &indices, w).unwrap_or((0, 0, 1, 1)),
        };
        let buffer: Vec<u8> = (top..bottom)
            .flat_map(|row| &indices[row * w + left..row * w + right])
            .copied()
            .collect();
        let frame = gif::Frame {
            left: left as u16,
            top: top as u16,
            width: (right - left) as u16,
            height: (bottom - top) as u16,
            delay: delay_cs,
            dispose: gif::DisposalMethod::Keep,
            buffer: Cow::Owned(buffer),
            ..gif::Frame::default()
        };
        self.encoder.write_frame(&frame)?;
        self.previous = Some(indices);
        Ok(())
    }

    /// The finished file's bytes.
    pub(crate) fn finish(self) -> Result<Vec<u8>, gif::EncodingError> {
        self.encoder.into_inner()
    }
}

/// The smallest rectangle `(left, top, right, bottom)` (right and bottom
/// exclusive) holding every pixel where two pictures of width `width`
/// differ; `None` when they are equal.
fn changed_rect(a: &[u8], b: &[u8], width: usize) -> Option<(usize, usize, usize, usize)> {
    let rows: Vec<usize> = (0..a.len() / width)
        .filter(|&r| a[r * width..(r + 1) * width] != b[r * width..(r + 1) * width])
        .collect();
    let (&top, &last) = (rows.first()?, rows.last()?);
    let (mut left, mut right) = (width, 0);
    for row in top..=last {
        let (ra, rb) = (
            &a[row * width..(row + 1) * width],
            &b[row * width..(row + 1) * width],
        );
        if let Some(first) = (0..width).find(|&x| ra[x] != rb[x]) {
            left = left.min(first);
            right = right.max(
                (first..width)
                    .rev()
                    .find(|&x| ra[x] != rb[x])
                    .unwrap_or(first)
                    + 1,
            );
        }
    }
    Some((left, top, right, last + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scene_colours_are_exact_and_others_are_near() {
        let mut palette = Palette::new([Rgb::BLUE, Rgb::ORANGE, Rgb::BLUE]);
        assert!(palette.colours.len() <= PALETTE_SIZE);
        assert_eq!(palette.index([31, 119, 180]), 0);
        assert_eq!(palette.index([255, 127, 14]), 1);
        let grey = palette.index([100, 100, 100]) as usize;
        let c = palette.colours[grey];
        assert!(c.iter().all(|&v| (90..=110).contains(&v)), "{c:?}");
        assert_eq!(palette.table().len(), 768);
    }

    #[test]
    fn changed_rect_bounds_the_differences() {
        let a = vec![0u8; 12];
        let mut b = a.clone();
        assert_eq!(changed_rect(&a, &b, 4), None);
        b[5] = 1; // row 1, column 1
        b[10] = 1; // row 2, column 2
        assert_eq!(changed_rect(&a, &b, 4), Some((1, 1, 3, 3)));
    }
}
