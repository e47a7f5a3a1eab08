-- The folders the lockfile advertises: the current directory plus the workspace folders of
-- attached LSP clients. The Pi extension matches its cwd against these by string prefix.
local M = {}

function M.folders()
  local seen, out = {}, {}
  local function add(path)
    if type(path) ~= "string" or path == "" then
      return
    end
    path = vim.fs.normalize(path)
    if not seen[path] then
      seen[path] = true
      table.insert(out, path)
    end
  end
  add(vim.fn.getcwd())
  -- Only look at LSP when it is in use: requiring vim.lsp just to find no clients costs startup.
  if package.loaded["vim.lsp"] then
    for _, client in ipairs(vim.lsp.get_clients()) do
      for _, wf in ipairs(client.workspace_folders or {}) do
        -- The uri is the folder; `name` is only a display name (often the folder's basename).
        add(type(wf.uri) == "string" and vim.uri_to_fname(wf.uri) or nil)
      end
      if not client.workspace_folders and client.root_dir then
        add(client.root_dir)
      end
    end
  end
  return out
end

local function below(p, dir)
  return p == dir or p:sub(1, #dir + 1) == (dir:sub(-1) == "/" and dir or dir .. "/")
end

-- Whether `p` (normalized) is in folder `dir` or in the folder `dir` really is.
local function in_folder(p, dir, native)
  if below(p, dir) then
    return true
  end
  local real = native and native.realpath(dir) -- within a deadline: a hung mount is no folder
  return real ~= nil and below(p, real)
end

--- Whether `path` is inside one of the folders (a proposal outside them deserves a second look).
--- A real path (links resolved, as a review's target is) is inside a folder reached through a
--- link too.
function M.contains(path)
  local p = vim.fs.normalize(path)
  local native = require("pi-ide.core.native").get()
  for _, dir in ipairs(M.folders()) do
    if in_folder(p, dir, native) then
      return true
    end
  end
  return false
end

--- Whether `path` is inside Neovim's current folder (what the pending changes' watch sees).
function M.in_cwd(path)
  return in_folder(vim.fs.normalize(path), vim.fs.normalize(vim.fn.getcwd()), require("pi-ide.core.native").get())
end

return M
