//! The doc comments of settings structs, read from their source at run
//! time, so that `shoal config` explains every key with the words the code
//! documents it with and cannot drift from them.
//!
//! A crate that defines settings embeds its own source files
//! (`include_str!`) and answers [`FieldDoc`]s for its struct names through
//! [`struct_docs`].

/// One field of a settings struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDoc {
    /// The field's name: its key in a config file.
    pub name: String,
    /// Its type as written (`ArmConfig`, `Option<f64>`, …).
    pub ty: String,
    /// Its doc comment, lines joined by spaces.
    pub doc: String,
}

/// The fields of `pub struct NAME { … }` in one of `sources`, each with
/// its doc comment; `None` if no source defines the struct. Fields are
/// `pub name: Type,` lines after their `///` lines (attributes between
/// them are skipped), as rustfmt writes them.
///
/// ```
/// use shoal_rl_core::docs::struct_docs;
/// let source = "/// Settings.\npub struct Toy {\n    /// Steps per episode.\n    /// Default 20.\n    #[serde(default)]\n    pub steps: usize,\n}\n";
/// let fields = struct_docs(&[source], "Toy").unwrap();
/// assert_eq!((fields[0].name.as_str(), fields[0].ty.as_str()), ("steps", "usize"));
/// assert_eq!(fields[0].doc, "Steps per episode. Default 20.");
/// assert!(struct_docs(&[source], "Other").is_none());
/// ```
pub fn struct_docs(sources: &[&str], name: &str) -> Option<Vec<FieldDoc>> {
    let header = format!("pub struct {name} {{");
    let source = sources
        .iter()
        .find(|s| s.lines().any(|l| l.trim() == header))?;
    let mut lines = source.lines().skip_while(|l| l.trim() != header).skip(1);
    let (mut fields, mut doc) = (Vec::new(), Vec::<&str>::new());
    for line in lines.by_ref() {
        let line = line.trim();
        if line == "}" {
            break;
        }
        if let Some(text) = line.strip_prefix("///") {
            doc.push(text.trim());
        } else if let Some(field) = line.strip_prefix("pub ")
            && let Some((field, ty)) = field.split_once(':')
        {
            fields.push(FieldDoc {
                name: field.trim().to_string(),
                ty: ty.trim().trim_end_matches(',').to_string(),
                doc: doc.join(" "),
            });
            doc.clear();
        } else if !line.starts_with("#[") {
            doc.clear();
        }
    }
    Some(fields)
}

/// Every key below the struct `root` as `(dotted key, doc)`: a field whose
/// type (inside an `Option`) is itself documented by `lookup` is a table of
/// its own fields, as a config file writes it (`arm.substeps`).
///
/// ```
/// use shoal_rl_core::docs::{key_docs, struct_docs};
/// let source = "pub struct Outer {\n    /// The inner part.\n    pub inner: Inner,\n    /// A rate.\n    pub rate: f64,\n}\npub struct Inner {\n    /// Steps.\n    pub steps: usize,\n}\n";
/// let keys = key_docs(&|name| struct_docs(&[source], name), "Outer");
/// assert_eq!(keys, [("inner.steps".to_string(), "Steps.".to_string()), ("rate".into(), "A rate.".into())]);
/// ```
pub fn key_docs(
    lookup: &dyn Fn(&str) -> Option<Vec<FieldDoc>>,
    root: &str,
) -> Vec<(String, String)> {
    fn walk(
        lookup: &dyn Fn(&str) -> Option<Vec<FieldDoc>>,
        name: &str,
        prefix: &str,
        depth: usize,
        out: &mut Vec<(String, String)>,
    ) {
        for field in lookup(name).unwrap_or_default() {
            let key = format!("{prefix}{}", field.name);
            let inner = field
                .ty
                .strip_prefix("Option<")
                .and_then(|t| t.strip_suffix('>'));
            let ty = inner.unwrap_or(&field.ty);
            // Settings nest a level or two; the bound stops a type that
            // names itself.
            if depth < 4 && lookup(ty).is_some() {
                walk(lookup, ty, &format!("{key}."), depth + 1, out);
            } else {
                out.push((key, field.doc));
            }
        }
    }
    let mut out = Vec::new();
    walk(lookup, root, "", 0, &mut out);
    out
}
