-- The words options are written in: an option is its default, the Lua types it may have, and a
-- check returning an error text. schema.lua builds its tree of them; an agent's module
-- adds its own options in the same words. The comment right above an option is its
-- description: scripts/gen-docs.lua writes the help's options and the LuaCATS classes from both.
local M = {}

-- The values each one_of check allows, for the generated docs (weak: a check let go goes too).
local choices = setmetatable({}, { __mode = "k" })

--- One option. `check(value)` returns why a value is wrong, or nil.
function M.opt(default, types, check)
  return { is_option = true, default = default, types = types, check = check }
end

--- A check: a whole number of `unit`, at least `min`.
function M.whole_number(min, unit)
  return function(v)
    if v < min or v ~= math.floor(v) then
      return ("must be a whole number of %s, at least %d"):format(unit, min)
    end
  end
end

--- A check: one of these values.
function M.one_of(...)
  local allowed = { ... }
  local function check(v)
    if not vim.tbl_contains(allowed, v) then
      return "must be one of " .. table.concat(allowed, ", ")
    end
  end
  choices[check] = allowed
  return check
end

--- The values a check made by one_of allows; nil for any other check.
function M.choices(check)
  return choices[check]
end

--- An option in milliseconds, at least `min`.
function M.ms(default, min)
  return M.opt(default, { "number" }, M.whole_number(min, "milliseconds"))
end

--- A key (like "<leader>pa"), or false for none.
function M.key(default)
  return M.opt(default, { "string", "boolean" }, function(v)
    if v == true or v == "" then
      return "must be a key (like \"<leader>pa\") or false"
    end
  end)
end

--- A check: a fraction of the screen (below 1) or a number of cells.
function M.fraction_or_columns(v)
  if v <= 0 then
    return "must be a fraction of the screen (0 to 1) or a number of columns"
  end
end

--- Whether `list` is a non-empty list of strings.
function M.strings_only(list)
  return type(list) == "table" and #list > 0 and vim.iter(list):all(function(x)
    return type(x) == "string"
  end)
end

--- Whether `map` maps strings to strings.
function M.string_map(map)
  if type(map) ~= "table" then
    return false
  end
  for k, v in pairs(map) do
    if type(k) ~= "string" or type(v) ~= "string" then
      return false
    end
  end
  return true
end

return M
