-- :PiIde resume: earlier sessions of this folder, newest first, to go on with. Pi keeps one
-- JSONL file per session in a folder per working directory (<agent dir>/sessions/--<cwd>--/,
-- or wherever the user's settings put it); the running Pi's own session file (get_state) says
-- which folder that is, so every setting that moves it is honoured.
local M = {}

-- Enough of a session file to find its first prompt.
local HEAD_BYTES = 256 * 1024

local function first_prompt(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local head = f:read(HEAD_BYTES) or ""
  f:close()
  local name
  for line in head:gmatch("[^\n]+") do
    local ok, entry = pcall(vim.json.decode, line)
    if ok and type(entry) == "table" then
      if entry.type == "session_info" and type(entry.name) == "string" then
        name = entry.name
      elseif entry.type == "message" and type(entry.message) == "table" and entry.message.role == "user" then
        local c = entry.message.content
        local text = type(c) == "string" and c or (type(c) == "table" and type(c[1]) == "table" and c[1].text) or ""
        return name or text
      end
    end
  end
  return name
end

--- The sessions in `dir` but `current`: { path, mtime, title }, newest first.
function M.list(dir, current)
  local out = {}
  for _, path in ipairs(vim.fn.glob(vim.fs.joinpath(dir, "*.jsonl"), true, true)) do
    local stat = vim.uv.fs_stat(path)
    if stat and path ~= current then
      local title = first_prompt(path) or vim.fs.basename(path)
      table.insert(out, { path = path, mtime = stat.mtime.sec, title = (title:gsub("%s+", " ")) })
    end
  end
  table.sort(out, function(a, b)
    return a.mtime > b.mtime
  end)
  return out
end

function M.pick()
  local chat = require("pi-ide.features.chat")
  local state = chat.request({ type = "get_state" })
  local current = state and type(state.data) == "table" and state.data.sessionFile or nil
  if type(current) ~= "string" then
    return vim.notify("pi-ide.nvim: Pi keeps no sessions here (it runs with --no-session?)", vim.log.levels.WARN)
  end
  local sessions = M.list(vim.fs.dirname(current), current)
  if #sessions == 0 then
    return vim.notify("pi-ide.nvim: no earlier Pi session in this folder", vim.log.levels.INFO)
  end
  vim.ui.select(sessions, {
    prompt = "Resume a Pi session",
    format_item = function(s)
      local title = s.title
      if vim.fn.strchars(title) > 60 then
        title = vim.fn.strcharpart(title, 0, 59) .. "…"
      end
      return ("%s  %s"):format(os.date("%Y-%m-%d %H:%M", s.mtime), title)
    end,
  }, function(s)
    if s then
      chat.open(false)
      chat.switch(s.path)
    end
  end)
end

return M
