-- Which file or folder an explorer buffer points at, for `:PiIde add` with no path. One module
-- per explorer, chosen by filetype; each knows its plugin's documented API and nothing else.
local M = {}

M.by_filetype = {
  snacks_picker_list = "snacks",
  ["neo-tree"] = "neo_tree",
  oil = "oil",
  minifiles = "mini_files",
  NvimTree = "nvim_tree",
  netrw = "netrw",
}

--- A plugin's module, or an error that says it is not there.
function M.require(module)
  local ok, mod = pcall(require, module)
  if not ok or type(mod) ~= "table" then
    error(("require('%s') failed: is it installed and loaded?"):format(module), 0)
  end
  return mod
end

--- Calls t[fname](...), or errors with a message naming the function the API lacks.
function M.call(t, label, fname, ...)
  if type(t) ~= "table" or type(t[fname]) ~= "function" then
    error(("%s.%s() is missing (a changed API?)"):format(label, fname), 0)
  end
  local ok, res = pcall(t[fname], ...)
  if not ok then
    error(("%s.%s() failed: %s"):format(label, fname, tostring(res):match("[^\n]*")), 0)
  end
  return res
end

--- Calls fn(line) with the cursor on each line from first to last (for APIs that only read the
--- cursor); the view is restored afterwards, also when fn fails. Returns fn's results in order.
function M.at_lines(first, last, fn)
  local view, out = vim.fn.winsaveview(), {}
  local ok, err = pcall(function()
    for line = first, last do
      vim.api.nvim_win_set_cursor(0, { line, 0 })
      table.insert(out, fn(line))
    end
  end)
  vim.fn.winrestview(view)
  if not ok then
    error(err, 0)
  end
  return out
end

-- An entry as the agent gets it: absolute, normalised, a folder ending with "/"; nil for
-- parent entries ("..") and for what is not on disk (the second result says which).
local function clean(raw)
  if type(raw) ~= "string" or raw == "" then
    return nil
  end
  local name = raw:gsub("/+$", ""):match("[^/]*$")
  if name == ".." or name == "." then
    return nil
  end
  local path = vim.fs.normalize(vim.fn.fnamemodify(raw, ":p"))
  local stat = vim.uv.fs_stat(path)
  if not stat then
    return nil, path
  end
  path = path:gsub("/$", "")
  return stat.type == "directory" and (path == "" and "/" or path .. "/") or path
end

-- Each entry once, in order; the ones not found on disk, apart.
local function clean_all(raws)
  local out, missing, seen = {}, {}, {}
  for _, raw in ipairs(raws) do
    local path, gone = clean(raw)
    if path and not seen[path] then
      seen[path] = true
      table.insert(out, path)
    elseif gone then
      table.insert(missing, gone)
    end
  end
  return out, missing
end

--- The entries the user points at in `buf`, an explorer's buffer: the one under the cursor, or
--- those on lines first..last (a range). Returns nil when `buf` is no explorer's; else a list of
--- absolute paths (folders end with "/") and, when it is empty, why, and whether it is because
--- the explorer's API failed.
function M.entries(buf, first, last)
  local name = M.by_filetype[vim.bo[buf].filetype]
  if not name then
    return nil
  end
  local explorer = require("pi-ide.features.explorers." .. name)
  local ok, raws, err = pcall(explorer.entries, buf, first, last)
  if not ok or type(raws) ~= "table" then
    local why = ok and (err or "no entries") or tostring(raws):match("[^\n]*")
    return {}, ("%s: %s"):format(explorer.name, why), true
  end
  local paths, missing = clean_all(raws)
  if #paths == 0 then
    local where = first and "on these lines" or "under the cursor"
    local why = #missing > 0 and ("not on disk: " .. missing[1]) or ("no file or folder " .. where)
    return paths, ("%s: %s"):format(explorer.name, why)
  end
  return paths
end

return M
