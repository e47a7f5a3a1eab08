-- Finds and loads the Rust core (target/release/libpi_ide.so) and checks that it is the build
-- this Lua code expects. Every failure becomes one sentence that names the command to run.
local M = {}

-- Must match `ABI` in src/lib.rs and `version` in Cargo.toml (a test checks both).
M.ABI = 11
M.VERSION = "0.1.0"

local sep = package.config:sub(1, 1)
local this_file = debug.getinfo(1, "S").source:sub(2)
-- lua/pi-ide/core/native.lua -> the plugin's root folder
M.root = vim.fn.fnamemodify(this_file, ":p:h:h:h:h")

local function lib_name()
  local sysname = vim.uv.os_uname().sysname
  if sysname == "Darwin" then
    return "libpi_ide.dylib"
  elseif sysname:find("Windows") then
    return "pi_ide.dll"
  end
  return "libpi_ide.so"
end

function M.path()
  return table.concat({ M.root, "target", "release", lib_name() }, sep)
end

function M.build_hint()
  return ("run `:Lazy build pi-ide.nvim` or `:PiIde build` (a release downloads its prebuilt library; otherwise `cargo build --release` in %s)"):format(
    M.root
  )
end

local loaded, load_error
-- A build that failed told the user what to do already (install/build.lua): the start that
-- follows says no more.
local told

-- The checkout's stamp, by the library (src/support/stamp.rs: the same code that stamped it).
-- It reads every Rust source, 1.3 ms of each start: so it is kept in the cache by the key the
-- library gives without reading them (sizes, inodes, change times), which any change moves.
local function checkout_stamp(mod)
  if not mod.checkout_key then
    return mod.checkout_stamp and mod.checkout_stamp(M.root)
  end
  local key = mod.checkout_key(M.root)
  local cache = vim.fn.stdpath("cache") .. "/pi-ide-stamps.json"
  local files = require("pi-ide.core.files")
  local ok, kept = pcall(vim.json.decode, files.read(cache, 64 * 1024) or "")
  kept = ok and type(kept) == "table" and kept or {}
  local entry = kept[M.root]
  if key and type(entry) == "table" and entry.key == key and type(entry.stamp) == "string" then
    return entry.stamp
  end
  local stamp = mod.checkout_stamp(M.root)
  if key and stamp then
    kept[M.root] = { key = key, stamp = stamp }
    vim.fn.mkdir(vim.fn.fnamemodify(cache, ":h"), "p")
    files.write(cache, vim.json.encode(kept))
  end
  return stamp
end

--- Returns the native module, or nil, a message for the user, and whether they were told it.
function M.load()
  if loaded then
    return loaded
  end
  if load_error then
    local was_told = told
    told = nil
    return nil, load_error, was_told
  end
  local path = M.path()
  if not vim.uv.fs_stat(path) then
    load_error = ("the native library is not built (%s is missing): %s"):format(path, M.build_hint())
    return nil, load_error
  end
  local open, err = package.loadlib(path, "luaopen_pi_ide")
  if not open then
    load_error = ("cannot load the native library %s (%s): %s"):format(path, tostring(err), M.build_hint())
    return nil, load_error
  end
  local ok, mod = pcall(open)
  if not ok or type(mod) ~= "table" then
    load_error = ("the native library failed to initialise (%s): %s"):format(tostring(mod), M.build_hint())
    return nil, load_error
  end
  if mod.abi ~= M.ABI or mod.version ~= M.VERSION then
    load_error = ("the native library is version %s (ABI %s) but this Lua code needs %s (ABI %s); it is stale: %s, then restart Neovim"):format(
      tostring(mod.version),
      tostring(mod.abi),
      M.VERSION,
      M.ABI,
      M.build_hint()
    )
    return nil, load_error
  end
  -- Built from these sources? (A `git pull` that changed Rust without a rebuild, and without
  -- a bump of the ABI number, would otherwise load old code.)
  local stamp = checkout_stamp(mod)
  if stamp and stamp ~= mod.source_stamp then
    load_error = (
      "the native library was built from other sources than this checkout (stamp %s, the sources are %s); it is stale: %s, then restart Neovim"
    ):format(tostring(mod.source_stamp), stamp, M.build_hint())
    return nil, load_error
  end
  loaded = mod
  return mod
end

--- Forgets why loading failed, so that the next load() tries again (after a build).
function M.retry()
  load_error, told = nil, nil
end

--- A build failed and said why (`msg`): with no library in place, that is why loading fails,
--- and the next start need not tell it again. Returns whether the user was told just that
--- already, and nothing has tried to load since.
function M.build_failed(msg)
  local again = told and load_error == msg
  if not loaded and not vim.uv.fs_stat(M.path()) then
    load_error, told = msg, true
  end
  return again
end

--- The loaded module, or nil; never loads.
function M.get()
  return loaded
end

return M
