-- Undecided pending changes kept across a restart of Neovim: an index and each baseline's bytes
-- under stdpath("state")/pi-ide/pending/<folder's hash>/ (readable by the user alone: the
-- baselines are the workspace's text). Loaded when the watch begins; a file back at its
-- baseline since is dropped.
local M = {}

local function root()
  return vim.fn.stdpath("state") .. "/pi-ide/pending"
end

local function dir_of(folder)
  return ("%s/%s"):format(root(), vim.fn.sha256(folder):sub(1, 16))
end

-- Nothing kept for any folder: the common start, which then needs no hash (Neovim's first
-- sha256() runs its self-test, 3 ms of every start). A folder's last change decided removes
-- its folder, and the last folder the root.
local function nothing_kept()
  local it = vim.uv.fs_scandir(root())
  return not it or vim.uv.fs_scandir_next(it) == nil
end

local function write(path, bytes)
  return require("pi-ide.core.files").write(path, bytes)
end

-- Only a regular file is read (files.lua); none kept is larger than this.
local MAX_BYTES = 64 * 1024 * 1024

local function read(path)
  return (require("pi-ide.core.files").read(path, MAX_BYTES))
end

--- The bytes of `path`, a regular file (no link followed) within the cap, else nil.
M.read = read

-- The file holding `e`'s baseline, written unless this session already wrote that very text
-- (Lua strings are interned: comparing them is one pointer): a storm's 200 created files each
-- wrote theirs again at every save (190 ms). A text with a blob id is named by it and written
-- once; an empty one (a created file's) needs no file.
local function store_base(dir, e)
  if not e.base or e.base == "" then
    return nil
  end
  if e.stored ~= e.base then
    local name = e.base_blob and ("base-" .. e.base_blob) or ("text-%d"):format(vim.uv.hrtime())
    if not (e.base_blob and vim.uv.fs_stat(dir .. "/" .. name)) then
      write(dir .. "/" .. name, e.base)
    end
    e.stored, e.base_file = e.base, name
  end
  return e.base_file
end

-- No change of the folder is kept: its files go, then its folder, and the root when it was the last.
local function forget(dir)
  for name in vim.fs.dir(dir) do
    os.remove(dir .. "/" .. name)
  end
  os.remove(dir)
  os.remove(root())
end

--- Saves `entries` (path -> entry) of `folder`: the index, and each baseline not written yet.
function M.save(folder, entries)
  if next(entries) == nil and nothing_kept() then
    return
  end
  local dir = dir_of(folder)
  if next(entries) == nil then
    return forget(dir)
  end
  vim.fn.mkdir(dir, "p", 448) -- 0700
  local index, names = {}, {}
  for path, e in pairs(entries) do
    local base = store_base(dir, e)
    if base then
      names[base] = true
    end
    table.insert(index, { path = path, agent = e.agent, turn = e.turn, kind = e.kind, base = base, base_empty = e.base == "", base_blob = e.base_blob, not_diffed = e.not_diffed })
  end
  local ok, json = pcall(vim.json.encode, { entries = index })
  if ok then
    write(dir .. "/index.json", json)
  end
  -- Baselines no entry names any more go.
  for name in vim.fs.dir(dir) do
    if (name:find("^base%-") or name:find("^text%-")) and not names[name] then
      os.remove(dir .. "/" .. name)
    end
  end
end

-- Folders whose index keeps no change (versions before 2026-12 left them): they go, so that a
-- start finds nothing kept and pays for no hash.
local function forget_empty()
  for name, kind in vim.fs.dir(root()) do
    local dir = root() .. "/" .. name
    local ok, index = pcall(vim.json.decode, kind == "directory" and read(dir .. "/index.json") or "")
    if ok and type(index) == "table" and type(index.entries) == "table" and next(index.entries) == nil then
      forget(dir)
    end
  end
end

--- Gives `pending.restore(path, entry)` each change of `folder` kept from an earlier session.
function M.load(folder, pending)
  if nothing_kept() then
    return
  end
  forget_empty()
  if nothing_kept() then
    return
  end
  local json = read(dir_of(folder) .. "/index.json")
  local ok, index = pcall(vim.json.decode, json or "")
  if not (ok and type(index) == "table" and type(index.entries) == "table") then
    return
  end
  local native = require("pi-ide.core.native").get()
  for _, i in ipairs(index.entries) do
    if type(i.path) == "string" and type(i.agent) == "string" then
      local now = read(i.path)
      local e = { agent = i.agent, turn = i.turn ~= vim.NIL and i.turn or nil, kind = i.kind, not_diffed = i.not_diffed ~= vim.NIL and i.not_diffed or nil }
      e.base = type(i.base) == "string" and read(dir_of(folder) .. "/" .. i.base) or (i.base_empty == true and "" or nil)
      e.stored, e.base_file = e.base, type(i.base) == "string" and i.base or nil
      e.base_blob = type(i.base_blob) == "string" and i.base_blob or nil
      e.text, e.blob = now, now and native and native.blob_of_file(i.path, 64 * 1024 * 1024) or nil
      if not (now == nil and i.kind == "created") and e.base ~= now then
        pending.restore(i.path, e)
      end
    end
  end
end

return M
