-- Getting the Rust core: the prebuilt library of this release when the checkout is at a
-- release tag (prebuilt.lua: downloaded, SHA-256 verified, installed by rename), else
-- `cargo build --release`. Synchronously for lazy.nvim's build step (build.lua at the root), in
-- the background for :PiIde build. A library Neovim has loaded is never replaced in place
-- (cargo and the download both write a new file and rename it over the old name; the running
-- one stays mapped): after a rebuild, a restart loads the new one.
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
  local msg = "cargo was not found on PATH: install a Rust toolchain (https://rustup.rs), then build again"
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
      return done(true, msg)
    end
    -- A checksum mismatch is worth the user's eye even when a build follows.
    if why == "checksum" then
      vim.notify("pi-ide.nvim: " .. msg, vim.log.levels.WARN)
    end
    local started, err = pcall(cargo, msg)
    if not started then
      done(false, "cannot start cargo: " .. tostring(err))
    end
  end, progress)
end

--- Gets the library: `done(ok, message)` runs once, on the main loop, whatever fails on the
--- way (a build that could never end would leave :PiIde build "already running" for good).
--- `opts.source` skips the download; `opts.progress(msg)` is told how it goes.
function M.run(opts, done)
  local finished = false
  local function finish(ok, msg)
    if not finished then
      finished = true
      done(ok, msg)
    end
  end
  local ok, err = pcall(run, opts or {}, finish)
  if not ok then
    finish(false, "getting the core failed: " .. tostring(err))
  end
end

--- Gets the library and waits; raises a readable error on failure (what lazy.nvim shows).
function M.sync()
  local result
  M.run({}, function(ok, msg)
    result = { ok = ok, msg = msg }
  end)
  vim.wait(30 * 60 * 1000, function()
    return result ~= nil
  end, 50)
  if not result then
    error("pi-ide.nvim: getting the native library did not finish", 0)
  end
  if not result.ok then
    error("pi-ide.nvim: " .. result.msg, 0)
  end
  require("pi-ide.core.native").retry()
  return true
end

local running

--- Gets the library in the background with progress notifications (:PiIde build [source]).
--- `on_done(ok)` runs on the main loop.
function M.async(on_done, opts)
  local log = require("pi-ide.core.log")
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
    if not ok then
      log.notify(msg, vim.log.levels.ERROR)
    elseif require("pi-ide.core.native").get() then
      vim.notify(
        ("pi-ide.nvim: %s. Restart Neovim to use it (a loaded library is never replaced in place)."):format(msg),
        vim.log.levels.INFO
      )
    else
      require("pi-ide.core.native").retry()
      vim.notify(("pi-ide.nvim: %s."):format(msg), vim.log.levels.INFO)
    end
    if on_done then
      on_done(ok)
    end
  end)
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
