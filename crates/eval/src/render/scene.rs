//! Plain-data description of an animation: layout, frames, shapes and trails.
//!
//! Nothing here knows how pixels are made, so an environment (or a test) can
//! describe what to show with numbers alone and leave drawing to
//! [`render_gif`](super::render_gif).

/// An sRGB colour. Plain bytes, so callers need no drawing library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// Pure white: the default background.
    pub const WHITE: Rgb = Rgb(255, 255, 255);
    /// Pure black: text and outlines.
    pub const BLACK: Rgb = Rgb(0, 0, 0);
    /// Mid grey: secondary text, table edges.
    pub const GREY: Rgb = Rgb(127, 127, 127);
    /// Very light grey: surfaces such as a table top.
    pub const LIGHT_GREY: Rgb = Rgb(225, 225, 225);
    /// Matplotlib's tab:blue, the colour of the agent's body.
    pub const BLUE: Rgb = Rgb(31, 119, 180);
    /// Matplotlib's tab:orange, the colour of trails.
    pub const ORANGE: Rgb = Rgb(255, 127, 14);
    /// Matplotlib's tab:green, the colour of goals.
    pub const GREEN: Rgb = Rgb(44, 160, 44);
    /// Matplotlib's tab:red, the colour of heads and grippers.
    pub const RED: Rgb = Rgb(214, 39, 40);
    /// Matplotlib's tab:purple, the colour of subgoals.
    pub const PURPLE: Rgb = Rgb(148, 103, 189);
    /// Matplotlib's tab:brown, the colour of pushed objects.
    pub const BROWN: Rgb = Rgb(140, 86, 75);
}

/// An axis-aligned rectangle of the world plane a view shows, in world units
/// (metres for shoal's tasks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Lower-left corner `[x, y]`.
    pub min: [f32; 2],
    /// Upper-right corner `[x, y]`.
    pub max: [f32; 2],
}

impl Bounds {
    /// The rectangle between two corners given in any order.
    pub fn new(a: [f32; 2], b: [f32; 2]) -> Self {
        Bounds {
            min: [a[0].min(b[0]), a[1].min(b[1])],
            max: [a[0].max(b[0]), a[1].max(b[1])],
        }
    }

    /// The smallest rectangle holding every point; `None` when there are no
    /// finite points.
    pub fn around(points: impl IntoIterator<Item = [f32; 2]>) -> Option<Self> {
        let mut bounds: Option<Bounds> = None;
        for p in points
            .into_iter()
            .filter(|p| p[0].is_finite() && p[1].is_finite())
        {
            bounds = Some(match bounds {
                None => Bounds { min: p, max: p },
                Some(b) => Bounds {
                    min: [b.min[0].min(p[0]), b.min[1].min(p[1])],
                    max: [b.max[0].max(p[0]), b.max[1].max(p[1])],
                },
            });
        }
        bounds
    }

    /// The same rectangle grown by `margin` on every side.
    #[must_use]
    pub fn padded(self, margin: f32) -> Self {
        Bounds {
            min: [self.min[0] - margin, self.min[1] - margin],
            max: [self.max[0] + margin, self.max[1] + margin],
        }
    }

    /// A `width` × `height` rectangle centred on `centre`.
    pub fn centred(centre: [f32; 2], width: f32, height: f32) -> Self {
        Bounds {
            min: [centre[0] - 0.5 * width, centre[1] - 0.5 * height],
            max: [centre[0] + 0.5 * width, centre[1] + 0.5 * height],
        }
    }

    /// Width along x.
    pub fn width(&self) -> f32 {
        self.max[0] - self.min[0]
    }

    /// Height along y.
    pub fn height(&self) -> f32 {
        self.max[1] - self.min[1]
    }

    /// The centre point.
    pub fn centre(&self) -> [f32; 2] {
        [
            0.5 * (self.min[0] + self.max[0]),
            0.5 * (self.min[1] + self.max[1]),
        ]
    }

    /// The same centre with width and height grown (never shrunk) so that
    /// `width / height == aspect`; one world unit then spans as many pixels
    /// along x as along y, and circles stay round.
    #[must_use]
    pub fn with_aspect(self, aspect: f32) -> Self {
        let (w, h) = (self.width().max(1e-6), self.height().max(1e-6));
        let (w, h) = if w / h < aspect {
            (h * aspect, h)
        } else {
            (w, w / aspect)
        };
        Bounds::centred(self.centre(), w, h)
    }

    /// Whether `p` lies inside (edges included).
    pub fn contains(&self, p: [f32; 2]) -> bool {
        p[0] >= self.min[0] && p[0] <= self.max[0] && p[1] >= self.min[1] && p[1] <= self.max[1]
    }
}

/// One panel of the picture: a titled window onto the world plane.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// Shown above the panel, e.g. `"from above"`.
    pub title: String,
    /// Name of the horizontal world axis, e.g. `"x (m)"`.
    pub x_label: String,
    /// Name of the vertical world axis, e.g. `"y (m)"`.
    pub y_label: String,
    /// What the panel shows unless a frame moves the camera
    /// ([`FrameView::camera`]). Widened to the panel's pixel aspect ratio
    /// when drawn, so one metre is as long across as up.
    pub bounds: Bounds,
}

impl View {
    /// A view of `bounds` with axes named `x (m)` and `y (m)`.
    pub fn new(title: impl Into<String>, bounds: Bounds) -> Self {
        View {
            title: title.into(),
            x_label: "x (m)".into(),
            y_label: "y (m)".into(),
            bounds,
        }
    }

    /// Renames the axes.
    #[must_use]
    pub fn axes(mut self, x_label: impl Into<String>, y_label: impl Into<String>) -> Self {
        self.x_label = x_label.into();
        self.y_label = y_label.into();
        self
    }
}

/// The fixed part of an animation: picture size, title and panels (laid out
/// side by side, left to right).
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// Shown at the top left of every frame.
    pub title: String,
    /// Picture width in pixels.
    pub width: u32,
    /// Picture height in pixels.
    pub height: u32,
    /// Fill colour behind everything.
    pub background: Rgb,
    /// The panels, left to right.
    pub views: Vec<View>,
}

impl Scene {
    /// A white `width` × `height` scene with the given panels.
    pub fn new(title: impl Into<String>, width: u32, height: u32, views: Vec<View>) -> Self {
        Scene {
            title: title.into(),
            width,
            height,
            background: Rgb::WHITE,
            views,
        }
    }
}

/// Something to draw, in world coordinates of the view it is placed in.
/// Widths and text sizes are in pixels, so they stay legible at any zoom.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// Connected line segments.
    Polyline {
        /// Vertices in order.
        points: Vec<[f32; 2]>,
        /// Stroke colour.
        colour: Rgb,
        /// Stroke width, pixels.
        width: u32,
    },
    /// A circle of radius given in world units (it grows when zooming in).
    Circle {
        /// Centre.
        centre: [f32; 2],
        /// Radius, world units.
        radius: f32,
        /// Fill or stroke colour.
        colour: Rgb,
        /// Filled disc, or a ring 2 px wide when false.
        filled: bool,
    },
    /// An axis-aligned rectangle.
    Rect {
        /// Lower-left corner.
        min: [f32; 2],
        /// Upper-right corner.
        max: [f32; 2],
        /// Fill or stroke colour.
        colour: Rgb,
        /// Filled, or outlined 2 px wide when false.
        filled: bool,
    },
    /// A line of text whose top-left corner is at `at`.
    Text {
        /// Anchor (top-left corner of the text), world units.
        at: [f32; 2],
        /// The text.
        text: String,
        /// Text colour.
        colour: Rgb,
        /// Font size, pixels.
        size: u32,
    },
}

/// What one panel shows in one frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameView {
    /// Drawn in order, later shapes on top.
    pub shapes: Vec<Shape>,
    /// Where the camera looks in this frame; `None` keeps [`View::bounds`].
    /// A camera that follows the agent sets this every frame.
    pub camera: Option<Bounds>,
}

/// One picture of the animation: a caption and the content of each panel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Frame {
    /// Shown at the top right, e.g. `"step 40   x = 1.23 m"`.
    pub caption: String,
    /// One entry per [`Scene::views`], same order; missing entries are empty.
    pub views: Vec<FrameView>,
}

impl Frame {
    /// An empty frame for a scene of `views` panels.
    pub fn new(caption: impl Into<String>, views: usize) -> Self {
        Frame {
            caption: caption.into(),
            views: vec![FrameView::default(); views],
        }
    }

    /// Adds `shape` on top of panel `view` (panels beyond the current count
    /// are created empty).
    pub fn draw(&mut self, view: usize, shape: Shape) -> &mut Self {
        if self.views.len() <= view {
            self.views.resize(view + 1, FrameView::default());
        }
        self.views[view].shapes.push(shape);
        self
    }

    /// Points panel `view`'s camera at `bounds` for this frame.
    pub fn camera(&mut self, view: usize, bounds: Bounds) -> &mut Self {
        if self.views.len() <= view {
            self.views.resize(view + 1, FrameView::default());
        }
        self.views[view].camera = Some(bounds);
        self
    }
}

/// The path a point has travelled, for drawing as a fading line behind a
/// moving body.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trail {
    points: Vec<[f32; 2]>,
    max_len: Option<usize>,
}

impl Trail {
    /// A trail that keeps every point.
    pub fn new() -> Self {
        Trail::default()
    }

    /// A trail that keeps only the latest `max_len` points, so old history
    /// does not clutter a long episode.
    pub fn bounded(max_len: usize) -> Self {
        Trail {
            points: Vec::new(),
            max_len: Some(max_len.max(1)),
        }
    }

    /// Appends a point (non-finite points are skipped: a trail must stay drawable).
    pub fn push(&mut self, point: [f32; 2]) {
        if !(point[0].is_finite() && point[1].is_finite()) {
            return;
        }
        self.points.push(point);
        if let Some(max) = self.max_len
            && self.points.len() > max
        {
            let excess = self.points.len() - max;
            self.points.drain(..excess);
        }
    }

    /// Forgets every point (a new episode starts elsewhere).
    pub fn clear(&mut self) {
        self.points.clear();
    }

    /// The points kept, oldest first.
    pub fn points(&self) -> &[[f32; 2]] {
        &self.points
    }

    /// The trail as a polyline shape.
    pub fn shape(&self, colour: Rgb, width: u32) -> Shape {
        Shape::Polyline {
            points: self.points.clone(),
            colour,
            width,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_around_points_and_aspect_widening() {
        let b = Bounds::around([[0.0, 1.0], [2.0, -1.0], [f32::NAN, 9.0]]).unwrap();
        assert_eq!(b, Bounds::new([0.0, -1.0], [2.0, 1.0]));
        let wide = b.with_aspect(2.0);
        assert_eq!(wide.width(), 4.0);
        assert_eq!(wide.height(), 2.0);
        assert_eq!(wide.centre(), [1.0, 0.0]);
        let tall = b.with_aspect(0.5);
        assert_eq!((tall.width(), tall.height()), (2.0, 4.0));
        assert!(Bounds::around(std::iter::empty()).is_none());
    }

    #[test]
    fn bounded_trail_keeps_latest_points_and_skips_nan() {
        let mut trail = Trail::bounded(2);
        for p in [[0.0, 0.0], [1.0, 0.0], [f32::NAN, 0.0], [2.0, 0.0]] {
            trail.push(p);
        }
        assert_eq!(trail.points(), &[[1.0, 0.0], [2.0, 0.0]]);
    }

    #[test]
    fn frame_draw_grows_views() {
        let mut frame = Frame::new("t", 1);
        frame.draw(
            2,
            Shape::Circle {
                centre: [0.0, 0.0],
                radius: 1.0,
                colour: Rgb::RED,
                filled: true,
            },
        );
        assert_eq!(frame.views.len(), 3);
        assert_eq!(frame.views[2].shapes.len(), 1);
    }
}
