-- Undecided pending changes kept across a restart of Neovim: an index and each baseline's bytes
-- under stdpath("state")/pi-ide/pending/<folder's hash>/ (readable by the user alone: the
-- baselines are the workspace's text). Loaded when the watch begins; a file back at its
-- baseline since is dropped.
local M = {}

local function dir_of(folder)
  return ("%s/pi-ide/pending/%s"):format(vim.fn.stdpath("state"), vim.fn.sha256(folder):sub(1, 16))
end

local function write(path, bytes)
  local tmp = path .. ".tmp"
  local f = io.open(tmp, "wb")
  if not f then
    return false
  end
  f:write(bytes)
  f:close()
  return os.rename(tmp, path)
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local bytes = f:read("*a")
  f:close()
  return bytes
end

-- The baselines on disk, per folder's directory: file name -> true. A baseline's file is named
-- by its blob id, so it is written once however often the index is saved (a storm saves it once
-- a batch with thousands pending) and removed when no entry names it.
local on_disk = {}

local function listed(dir)
  if not on_disk[dir] then
    on_disk[dir] = {}
    for name in vim.fs.dir(dir) do
      if name:match("^base%-") then
        on_disk[dir][name] = true
      end
    end
  end
  return on_disk[dir]
end

--- Saves `entries` (path -> entry) of `folder`.
function M.save(folder, entries)
  local dir = dir_of(folder)
  vim.fn.mkdir(dir, "p", 448) -- 0700
  local have, named, index = listed(dir), {}, {}
  for path, e in pairs(entries) do
    local base = e.base and ("base-" .. (e.base_blob or (e.base == "" and "empty") or vim.fn.sha256(e.base))) or nil
    if base and not have[base] then
      have[base] = write(dir .. "/" .. base, e.base) and true or nil
    end
    if base then
      named[base] = true
    end
    table.insert(index, { path = path, agent = e.agent, turn = e.turn, kind = e.kind, base = base, base_blob = e.base_blob, not_diffed = e.not_diffed })
  end
  local ok, json = pcall(vim.json.encode, { entries = index })
  if ok then
    write(dir .. "/index.json", json)
  end
  for name in pairs(have) do
    if not named[name] then
      os.remove(dir .. "/" .. name)
      have[name] = nil
    end
  end
end

--- Gives `pending.restore(path, entry)` each change of `folder` kept from an earlier session.
function M.load(folder, pending)
  local json = read(dir_of(folder) .. "/index.json")
  local ok, index = pcall(vim.json.decode, json or "")
  if not (ok and type(index) == "table" and type(index.entries) == "table") then
    return
  end
  local native = require("pi-ide.core.native").get()
  -- Every baseline read before any is restored: a restore saves the index, and a save removes
  -- the baselines of the entries not restored yet.
  local kept = {}
  for _, i in ipairs(index.entries) do
    if type(i.path) == "string" and type(i.agent) == "string" then
      local now = read(i.path)
      local e = { agent = i.agent, turn = i.turn ~= vim.NIL and i.turn or nil, kind = i.kind, not_diffed = i.not_diffed ~= vim.NIL and i.not_diffed or nil }
      e.base = type(i.base) == "string" and read(dir_of(folder) .. "/" .. i.base) or nil
      e.base_blob = type(i.base_blob) == "string" and i.base_blob or nil
      e.text, e.blob = now, now and native and native.blob_of_file(i.path, 64 * 1024 * 1024) or nil
      if not (now == nil and i.kind == "created") and e.base ~= now then
        table.insert(kept, { i.path, e })
      end
    end
  end
  for _, k in ipairs(kept) do
    pending.restore(k[1], k[2])
  end
end

return M
