-- An ACP chat's header (its winbar): the agent, its mode and model, context use and cost where
-- the agent reports them, and what it is doing.
local M = {}

local function short(n)
  return n >= 1000 and ("%.1fk"):format(n / 1000) or tostring(math.floor(n))
end

local function name_of(list, id, key)
  for _, item in ipairs(list or {}) do
    if type(item) == "table" and item[key] == id then
      return item.name or id
    end
  end
  return id
end

---@param chat PiIde.AcpChat
function M.text(chat)
  local i = chat.info
  local parts = { chat:label() }
  if i.mode then
    table.insert(parts, "mode " .. tostring(name_of(i.modes, i.mode, "id")))
  end
  if i.model then
    table.insert(parts, tostring(name_of(i.models, i.model, "modelId")))
  end
  if type(i.used) == "number" and type(i.size) == "number" and i.size > 0 then
    table.insert(parts, ("%s/%s tokens (%d%%)"):format(short(i.used), short(i.size), math.floor(100 * i.used / i.size)))
  end
  if type(i.cost) == "table" and type(i.cost.amount) == "number" then
    table.insert(parts, ("%.2f %s"):format(i.cost.amount, tostring(i.cost.currency or "")))
  end
  local state = chat:status()
  if state ~= "" then
    table.insert(parts, (state:gsub("^" .. vim.pesc(chat:label()) .. " ", "")))
  end
  for i, p in ipairs(parts) do
    parts[i] = p:gsub("%%", "%%%%")
  end
  -- In a narrow window the end is cut ("%<"), never the agent's name.
  return parts[1] .. "%<" .. (#parts > 1 and (" · " .. table.concat(parts, " · ", 2)) or "")
end

return M
