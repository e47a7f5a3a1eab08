//! Events as Lua tables, derived through serde (state/events.rs says each one's shape): an event
//! becomes a JSON object, then a table; its null members are left out (nil in Lua, where a
//! JSON null would be a truthy userdata).

use mlua::{Lua, Result as LuaResult, Table};
use serde_json::Value as Json;

use super::json::to_lua;
use crate::state::events::Event;

pub fn to_table(lua: &Lua, event: &Event) -> LuaResult<Table> {
    let value = serde_json::to_value(event).map_err(mlua::Error::external)?;
    let Json::Object(members) = value else {
        return Err(mlua::Error::runtime("an event is not an object"));
    };
    let t = lua.create_table_with_capacity(0, members.len())?;
    for (key, member) in members.iter().filter(|(_, v)| !v.is_null()) {
        t.raw_set(key.as_str(), to_lua(lua, member)?)?;
    }
    Ok(t)
}
