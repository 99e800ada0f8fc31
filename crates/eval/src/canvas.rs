//! The drawing surface plots and renders share: the embedded font and PNG
//! encoding. Both `plot` and `render` depend on it, and on nothing of each
//! other.

use std::sync::OnceLock;

use plotters::style::{FontStyle, register_font};
use shoal_rl_core::{Error, Result};

/// Registers DejaVu Sans as plotters' "sans-serif" family, once per process.
pub(crate) fn register_embedded_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Config(
            "the embedded plot font could not be loaded".into(),
        ))
    }
}

/// A PNG file holding one RGB image.
pub(crate) fn png_bytes(
    width: u32,
    height: u32,
    rgb: &[u8],
) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(rgb)?;
        writer.finish()?;
    }
    Ok(bytes)
}
