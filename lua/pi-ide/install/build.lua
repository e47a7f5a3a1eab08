-- Getting the Rust core: the prebuilt library of this release when the checkout is at a
-- release tag (prebuilt.lua: downloaded, SHA-256 verified, installed by rename), else
-- `cargo build --release`. Synchronously for lazy.nvim's build step (build.lua at the root), in
-- the background for :PiIde build, either way for another manager's hook (require("pi-ide").build:
-- vim.pack's PackChanged, rocks.nvim's RocksInstallPost). A library Neovim has loaded is never
-- replaced in place (cargo and the download both write a new file and rename it over the old
-- name; the running one stays mapped): after a rebuild, a restart loads the new one.
--
-- $PI_IDE_BUILD=source (or :PiIde build source) skips the download.
local M = {}

M.root = require("pi-ide.core.native").root
M.command = { "cargo", "build", "--release" }

local function tail(text, n)
  local lines = vim.split(vim.trim(text or ""), "\n", { plain = true })
  return table.concat(vim.list_slice(lines, math.max(1, #lines - n + 1), #lines), "\n")
end

local function no_cargo(why_no_prebuilt)
  local msg = "cargo was not found on PATH: install a Rust toolchain (https://rustup.rs), then run :PiIde build"
  if why_no_prebuilt then
    msg = ("no prebuilt library could be used (%s), and %s"):format(why_no_prebuilt, msg)
  end
  return msg
end

local function from_source_only(force)
  return force or vim.env.PI_IDE_BUILD == "source"
end

local function run(opts, done)
  local progress = opts.progress or function() end
  local function cargo(why_no_prebuilt)
    if vim.fn.executable("cargo") ~= 1 then
      return done(false, no_cargo(why_no_prebuilt))
    end
    if why_no_prebuilt then
      require("pi-ide.core.log").info("building from source: %s", why_no_prebuilt)
    end
    progress("building the core (cargo build --release)…")
    local last_progress, stderr = 0, {}
    return vim.system(M.command, {
      cwd = M.root,
      text = true,
      stderr = function(_, data)
        if not data then
          return
        end
        table.insert(stderr, data)
        local crate = data:match("Compiling ([%w_%-]+)")
        local now = vim.uv.now()
        if crate and now - last_progress > 1000 then
          last_progress = now
          vim.schedule(function()
            progress(("building… (compiling %s)"):format(crate))
          end)
        end
      end,
    }, function(r)
      vim.schedule(function()
        if r.code ~= 0 then
          done(false, ("`cargo build --release` failed in %s:\n%s"):format(M.root, tail(table.concat(stderr), 25)))
        else
          done(true, "built from source" .. (why_no_prebuilt and (" (" .. why_no_prebuilt .. ")") or ""))
        end
      end)
    end)
  end
  if from_source_only(opts.source) then
    return cargo()
  end
  local dest = require("pi-ide.core.native").path()
  require("pi-ide.install.prebuilt").install(M.root, dest, function(ok, msg, why)
    if ok then
      return done(true, msg, why)
    end
    -- A checksum mismatch is worth the user's eye even when a build follows (without cargo,
    -- the error says it).
    if why == "checksum" and vim.fn.executable("cargo") == 1 then
      vim.notify("pi-ide.nvim: " .. msg, vim.log.levels.WARN)
    end
    local started, err = pcall(cargo, msg)
    if not started then
      done(false, "cannot start cargo: " .. tostring(err))
    end
  end, progress)
end

--- Gets the library: `done(ok, message, why)` runs once, on the main loop, whatever fails on
--- the way (a build that could never end would leave :PiIde build "already running" for good);
--- `why` is prebuilt.install's.
--- `opts.source` skips the download; `opts.progress(msg)` is told how it goes.
function M.run(opts, done)
  local finished = false
  local function finish(ok, msg, why)
    if not finished then
      finished = true
      done(ok, msg, why)
    end
  end
  local ok, err = pcall(run, opts or {}, finish)
  if not ok then
    finish(false, "getting the core failed: " .. tostring(err))
  end
end

--- Gets the library and waits: `ok, message, why` (as M.run's).
function M.wait(opts)
  local result
  M.run(opts, function(ok, msg, why)
    result = { ok = ok, msg = msg, why = why }
  end)
  vim.wait(30 * 60 * 1000, function()
    return result ~= nil
  end, 50)
  if not result then
    return false, "getting the native library did not finish"
  end
  if result.ok then
    require("pi-ide.core.native").retry()
  end
  return result.ok, result.msg, result.why
end

--- Gets the library and waits; raises a readable error on failure (what lazy.nvim shows).
function M.sync()
  local ok, msg = M.wait({})
  if not ok then
    error("pi-ide.nvim: " .. msg, 0)
  end
  return true
end

-- Tells the user how it went, in one message: the error, or what was installed (and that a
-- library already loaded is used after a restart). `once`: a failure told just now is not told
-- again (a manager's hook run twice for one install: vim.pack 0.12-dev sends "update", then
-- "install").
local function report(ok, msg, once)
  local native = require("pi-ide.core.native")
  if not ok then
    if not native.build_failed(msg) or not once then
      require("pi-ide.core.log").notify(msg, vim.log.levels.ERROR)
    end
  elseif native.get() then
    vim.notify(
      ("pi-ide.nvim: %s. Restart Neovim to use it (a loaded library is never replaced in place)."):format(msg),
      vim.log.levels.INFO
    )
  else
    native.retry()
    vim.notify(("pi-ide.nvim: %s."):format(msg), vim.log.levels.INFO)
  end
end

local running

--- Gets the library in the background with progress notifications (:PiIde build [source]).
--- `on_done(ok, msg)` runs on the main loop.
function M.async(on_done, opts)
  if running then
    vim.notify("pi-ide.nvim: a build is already running", vim.log.levels.INFO)
    return
  end
  running = true
  M.run({
    source = opts and opts.source,
    progress = function(msg)
      vim.notify("pi-ide.nvim: " .. msg, vim.log.levels.INFO)
    end,
  }, function(ok, msg)
    running = nil
    report(ok, msg)
    if on_done then
      on_done(ok, msg)
    end
  end)
end

--- require("pi-ide").build(): for a plugin manager's hook. Waits, tells the user how it went
--- and returns `ok, message`; with `on_done`, in the background like :PiIde build.
function M.build(opts, on_done)
  if opts ~= nil and type(opts) ~= "table" then
    local msg = ("build() takes a table of options, e.g. { source = true } (got a %s)"):format(type(opts))
    report(false, msg)
    return false, msg
  end
  if on_done then
    return M.async(on_done, opts)
  end
  if running then
    return false, "a build is already running"
  end
  running = true
  local ok, msg, why = M.wait({ source = opts and opts.source })
  running = nil
  if why ~= "in place" then
    report(ok, msg, true)
  end
  return ok, msg
end

-- :PiIde build [source]: the release's prebuilt library when at a release tag, else cargo.
local function build_command(opts)
  if opts.fargs[2] and opts.fargs[2] ~= "source" then
    vim.notify(("pi-ide.nvim: :PiIde build takes no argument but 'source' (got '%s')"):format(opts.fargs[2]), vim.log.levels.ERROR)
    return
  end
  M.async(function(ok)
    -- A library that was missing can be loaded now (M.async let it be retried); a loaded one
    -- is kept until restart.
    if ok and not require("pi-ide.core.native").get() then
      require("pi-ide").autostart()
    end
  end, { source = opts.fargs[2] == "source" })
end

--- Its :PiIde subcommand (core/commands.lua).
M.commands = {
  build = {
    run = build_command,
    complete = function(arglead, n)
      return require("pi-ide.core.commands").first_of({ "source" })(arglead, n)
    end,
  },
}

return M
