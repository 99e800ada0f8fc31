//! Keyword arguments → shoal config structs, and back to Python dicts.
//!
//! A config travels through JSON: the task's default config is serialised,
//! each keyword overrides one field (an arm task also takes the fields of its
//! shared `arm` settings by their bare names, as `gymnasium.make` kwargs are
//! flat), and the result is deserialised with serde, so every field, type
//! check and default is the Rust struct's own. Unknown names are a
//! `TypeError` (as for any Python call); values serde or `validate` reject
//! are a `ValueError` carrying shoal's message.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The field of arm task configs that holds the settings shared by both
/// tasks; its fields may be given by their bare names.
const NESTED: &str = "arm";

/// `base` with the fields named in `kwargs` replaced.
///
/// `task` names the config in error messages (`worm`, `arm push`, …).
pub fn override_config<C: Serialize + DeserializeOwned>(
    task: &str,
    base: &C,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<C> {
    let base = to_json(base);
    let mut given = Vec::new();
    if let Some(kwargs) = kwargs {
        for (key, py_value) in kwargs.iter() {
            let key: String = key.extract()?;
            let value = from_py(&py_value)
                .map_err(|reason| PyValueError::new_err(format!("{task}: {key}: {reason}")))?;
            given.push((key, value));
        }
    }
    let with = |overrides: &[(String, Value)]| -> PyResult<Value> {
        let mut value = base.clone();
        let fields = value
            .as_object_mut()
            .expect("shoal configs serialise to JSON objects");
        for (key, new) in overrides {
            set_field(task, fields, key, new.clone())?;
        }
        Ok(value)
    };
    serde_json::from_value(with(&given)?).map_err(|e| {
        // serde names no field; find the keyword that does not fit on its own.
        let culprit = given.iter().find(|one| {
            with(std::slice::from_ref(one)).is_ok_and(|v| serde_json::from_value::<C>(v).is_err())
        });
        match culprit {
            Some((key, _)) => PyValueError::new_err(format!("{task}: {key}: {e}")),
            None => PyValueError::new_err(format!("{task}: {e}")),
        }
    })
}

/// Sets `key` among `fields` or, failing that, among the nested `arm`
/// fields; a dict given for `arm` itself overrides only the names it holds.
fn set_field(task: &str, fields: &mut Map<String, Value>, key: &str, new: Value) -> PyResult<()> {
    if key == NESTED
        && let (Some(Value::Object(arm)), Value::Object(given)) = (fields.get_mut(NESTED), &new)
    {
        for (k, v) in given {
            set_field(task, arm, k, v.clone())?;
        }
        return Ok(());
    }
    if let Some(slot) = fields.get_mut(key) {
        *slot = new;
        return Ok(());
    }
    if let Some(Value::Object(arm)) = fields.get_mut(NESTED)
        && let Some(slot) = arm.get_mut(key)
    {
        *slot = new;
        return Ok(());
    }
    let mut known: Vec<&str> = fields
        .iter()
        .flat_map(|(k, v)| match v {
            Value::Object(inner) if k == NESTED => inner.keys().map(String::as_str).collect(),
            _ => vec![k.as_str()],
        })
        .collect();
    known.sort_unstable();
    Err(PyTypeError::new_err(format!(
        "{task}: unknown keyword argument `{key}` (known: {})",
        known.join(", ")
    )))
}

/// A config as JSON, floats in their shortest decimal form (`0.1`, not
/// `0.10000000149011612`): serialising to text writes `f32` fields as `f32`.
pub fn to_json<C: Serialize>(config: &C) -> Value {
    let text = serde_json::to_string(config).expect("shoal configs serialise to JSON");
    serde_json::from_str(&text).expect("serde_json reads what it wrote")
}

/// A Python value as JSON: bool, int, float, str, sequences and dicts.
pub(crate) fn from_py(value: &Bound<'_, PyAny>) -> Result<Value, String> {
    // bool before int: Python's bool is an int.
    if value.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(
            value.extract::<bool>().map_err(|e| e.to_string())?,
        ));
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(v) = value.extract::<u64>() {
            return Ok(Value::from(v));
        }
        return value
            .extract::<i64>()
            .map(Value::from)
            .map_err(|_| format!("integer {value} is out of range"));
    }
    if value.is_instance_of::<PyString>() {
        return Ok(Value::String(
            value.extract::<String>().map_err(|e| e.to_string())?,
        ));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in dict.iter() {
            let k: String = k
                .extract()
                .map_err(|_| format!("dict key {k} is not a string"))?;
            map.insert(k, from_py(&v)?);
        }
        return Ok(Value::Object(map));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() || is_ndarray(value) {
        return value
            .try_iter()
            .map_err(|e| e.to_string())?
            .map(|item| from_py(&item.map_err(|e| e.to_string())?))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    // Floats last, so numpy scalars (which convert to float) land here too.
    if value.is_instance_of::<PyFloat>() || value.hasattr("__float__").unwrap_or(false) {
        let v: f64 = value.extract::<f64>().map_err(|e| e.to_string())?;
        return serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| format!("must be finite, got {v}"));
    }
    Err(format!(
        "unsupported value {value} (expected a number, bool, string, list or dict)"
    ))
}

fn is_ndarray(value: &Bound<'_, PyAny>) -> bool {
    value.get_type().name().is_ok_and(|name| name == "ndarray")
}

/// JSON as the equivalent Python value (objects become dicts).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i)) => i.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let items = items
                .iter()
                .map(|v| to_py(py, v))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
