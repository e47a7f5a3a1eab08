//! JSON values to Lua and back, for the boundary. Written here rather than through mlua's
//! `serialize` feature: that pulls serde-value and erased-serde into the library, code that
//! Neovim's process keeps resident, for what is a short recursive walk.
//!
//! The conventions are those Lua code relies on: `null` is a light userdata NULL (truthy, like
//! vim.NIL), whole numbers come back as integers, a table with items 1..n is an array (an
//! empty table is an object), and anything JSON cannot hold (a function, a cycle) is an error.

use mlua::{Lua, Result as LuaResult, Value};
use serde_json::{Map, Number, Value as Json};

/// Tables nested deeper than this are refused (a cycle, or nothing JSON needs).
const MAX_DEPTH: usize = 128;

pub fn to_lua(lua: &Lua, v: &Json) -> LuaResult<Value> {
    Ok(match v {
        Json::Null => Value::NULL,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i as _),
            None => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::String(lua.create_string(s)?),
        Json::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        Json::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                t.raw_set(k.as_str(), to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
    })
}

pub fn from_lua(v: Value) -> LuaResult<Json> {
    walk(v, 0)
}

fn number(f: f64) -> LuaResult<Json> {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        return Ok(Json::from(f as i64));
    }
    Number::from_f64(f)
        .map(Json::Number)
        .ok_or_else(|| mlua::Error::runtime(format!("{f} cannot be JSON")))
}

fn walk(v: Value, depth: usize) -> LuaResult<Json> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("nested too deep (or a cycle)"));
    }
    match v {
        Value::Nil => Ok(Json::Null),
        Value::LightUserData(p) if p.0.is_null() => Ok(Json::Null),
        Value::Boolean(b) => Ok(Json::Bool(b)),
        Value::Integer(i) => Ok(Json::from(i)),
        Value::Number(f) => number(f),
        Value::String(s) => Ok(Json::String(s.to_str()?.to_string())),
        Value::Table(t) => {
            let len = t.raw_len();
            let pairs = t.clone().pairs::<Value, Value>().count();
            if len > 0 && pairs == len {
                let mut items = Vec::with_capacity(len);
                for i in 1..=len {
                    items.push(walk(t.raw_get(i)?, depth + 1)?);
                }
                return Ok(Json::Array(items));
            }
            let mut map = Map::new();
            for pair in t.pairs::<Value, Value>() {
                let (k, item) = pair?;
                let key = match k {
                    Value::String(s) => s.to_str()?.to_string(),
                    Value::Integer(i) => i.to_string(),
                    Value::Number(f) => f.to_string(),
                    other => {
                        return Err(mlua::Error::runtime(format!(
                            "a {} cannot be a JSON key",
                            other.type_name()
                        )))
                    }
                };
                map.insert(key, walk(item, depth + 1)?);
            }
            Ok(Json::Object(map))
        }
        other => Err(mlua::Error::runtime(format!(
            "a {} cannot be JSON",
            other.type_name()
        ))),
    }
}
