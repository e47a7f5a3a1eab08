-- What a chat's agent is told, with its next prompt, of its own writes the user undid since.
-- A write no review saw is a pending change (features/pending/): each time one of the agent's
-- lands (User PiIdeChangePending), the text it wrote is kept; at the next prompt each such file
-- that differs from it on disk is named, with the lines undone by their place in what the agent
-- wrote (as review/declined.lua names declined hunks), then forgotten. The agent would otherwise
-- build on text that is no longer there. A file the user wrote (:w) since is said to be edited.
local lines = require("pi-ide.features.review.declined").lines

local M = {}

-- agent -> absolute path -> { text = what it wrote (false: it removed the file), edited = the
-- user wrote the file since }
local wrote = {}
local group

-- The file's bytes (false: none, or not a regular file: a FIFO is never opened).
local function read(path)
  return require("pi-ide.features.pending.store").read(path) or false
end

local function on_pending(ev)
  local d = ev.data or {}
  if type(d.path) == "string" and type(d.agent) == "string" then
    wrote[d.agent] = wrote[d.agent] or {}
    wrote[d.agent][d.path] = { text = read(d.path) }
  end
end

local function on_write(ev)
  local path = vim.fs.normalize(vim.fn.fnamemodify(ev.match, ":p"))
  for _, files in pairs(wrote) do
    if files[path] then
      files[path].edited = true
    end
  end
end

--- Keeps what agents write from now on (once; the chat calls it when it starts its agent).
function M.watch()
  if group then
    return
  end
  group = vim.api.nvim_create_augroup("PiIdeChatUndone", { clear = true })
  vim.api.nvim_create_autocmd("User", { group = group, pattern = "PiIdeChangePending", callback = on_pending })
  vim.api.nvim_create_autocmd("BufWritePost", { group = group, callback = on_write })
end

-- The places in `was` (what the agent wrote) that differ in `now`, in the agent's words.
local function places(was, now)
  local out = {}
  for _, h in ipairs(vim.diff(was, now, { result_type = "indices" })) do
    if h[2] > 0 then
      table.insert(out, "your " .. lines(h[1], h[2]))
    else
      table.insert(out, ("the lines you removed after your line %d"):format(h[1]))
    end
  end
  return table.concat(out, ", ")
end

-- What happened to the agent's write `w` of `path`, or nil if the file is as it wrote it.
local function what(path, w)
  local now = read(path)
  if now == w.text then
    return nil
  end
  local name = vim.fn.fnamemodify(path, ":~:.")
  local how = w.edited and "edited by the user" or "undone by the user"
  if now == false then
    return ("%s: your write (%s: the file is gone)"):format(name, how)
  elseif w.text == false then
    return ("%s: your removal (%s: the file is back)"):format(name, how)
  end
  return ("%s: %s (%s)"):format(name, places(w.text, now), how)
end

--- The note for `agent`'s next prompt (nil: nothing of its was undone) and the paths it names.
function M.note(agent)
  local said, paths = {}, {}
  for path, w in pairs(wrote[agent] or {}) do
    local line = what(path, w)
    if line then
      table.insert(said, line)
      table.insert(paths, path)
    end
  end
  if #said == 0 then
    return nil, paths
  end
  table.sort(said)
  return "[pi-ide: since your last prompt the user undid some of what you wrote; read these files again before you change them: "
    .. table.concat(said, "; ")
    .. "]",
    paths
end

--- `agent` was told of `paths`: forgotten until it writes them again.
function M.told(agent, paths)
  for _, path in ipairs(paths) do
    (wrote[agent] or {})[path] = nil
  end
end

return M
