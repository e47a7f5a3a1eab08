-- :checkhealth pi-ide
require("pi-ide.wiring")

local M = {}

local h = vim.health

local function check_neovim()
  if vim.fn.has("nvim-0.10") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim 0.10 or newer is needed, this is " .. tostring(vim.version()))
  end
end

local function check_library()
  local native = require("pi-ide.core.native")
  local mod, err = native.load()
  local source = mod and require("pi-ide.install.prebuilt").source(native.path())
  if mod then
    h.ok(
      ("native library %s (version %s, ABI %d), %s"):format(
        native.path(),
        mod.version,
        mod.abi,
        source
            and ("the prebuilt library of %s from %s, SHA-256 verified against %s"):format(
              source.tag,
              source.url,
              source.checksum_url or (source.url .. ".sha256")
            )
          or "built from source"
      )
    )
  else
    h.error(err)
  end
  if vim.fn.executable("cargo") == 1 then
    local r = vim.system({ "cargo", "--version" }, { text = true }):wait()
    h.ok("cargo: " .. vim.trim(r.stdout or ""))
  elseif source then
    h.info("cargo not found on PATH (not needed while releases have a prebuilt library for this platform)")
  else
    h.warn("cargo not found on PATH: needed to build the library (https://rustup.rs) when no prebuilt one can be used")
  end
  return mod
end

local function check_server()
  local info = require("pi-ide").info()
  if not info.running then
    h.warn("the server is not running (:PiIde start)")
    return
  end
  h.ok(("server on 127.0.0.1:%d as %q"):format(info.port, info.ide_name))
  for _, l in ipairs(require("pi-ide.core.native").get().check_lockfiles()) do
    if l.problem then
      h.error(("lockfile %s: %s"):format(l.path, l.problem), { "run :PiIde restart" })
    else
      h.ok(("lockfile %s (mode 600, token matches)"):format(l.path))
    end
  end
  for name, why in pairs(info.refused or {}) do
    h.error(("not serving %s: %s"):format(require("pi-ide.agents").get(name).label, why), { "then :PiIde stop and :PiIde start" })
  end
  for _, d in ipairs(require("pi-ide.core.native").get().check_lock_dirs()) do
    if d.problem then
      h.error(d.problem)
    else
      h.ok(("lock folder %s: yours, writable by you alone"):format(d.path))
    end
  end
  if #info.clients == 0 then
    h.info("no agent connected (in Pi, run /ide)")
  end
  for _, c in ipairs(info.clients) do
    h.ok(
      ("client #%d %s %s%s"):format(
        c.id,
        c.name or "(not initialized)",
        c.version or "",
        c.id == info.request_target and " (suggestions go here)" or ""
      )
    )
  end
end

-- A buffer-local mapping that hands the key on to the global one (ours) when it has nothing
-- to do: blink.cmp's, for a key whose commands end in "fallback". Returns how, or nil.
local function falls_back_to_us(m, lhs)
  if m.buffer ~= 1 or not (m.desc or ""):find("^blink%.cmp") or not package.loaded["blink.cmp"] then
    return nil
  end
  local ok, mappings = pcall(function()
    return require("blink.cmp.keymap").get_mappings(require("blink.cmp.config").keymap, "default")
  end)
  if not ok or type(mappings) ~= "table" then
    return nil
  end
  local want = vim.api.nvim_replace_termcodes(lhs, true, true, true)
  for key, commands in pairs(mappings) do
    if vim.api.nvim_replace_termcodes(key, true, true, true) == want and type(commands) == "table" then
      for _, c in ipairs(commands) do
        if c == "fallback" or c == "fallback_to_mappings" then
          return "blink.cmp maps it in this buffer and falls back to pi-ide's mapping when it has nothing to do"
        end
      end
    end
  end
  return nil
end

local function check_suggestions()
  local buf = vim.fn.bufnr("#")
  if buf > 0 and vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].filetype ~= "" then
    local ft = vim.bo[buf].filetype
    local ok, parser = pcall(vim.treesitter.get_parser, buf, nil, { error = false })
    if ok and parser then
      h.ok(("treesitter parser for %s: suggestions include an outline and the enclosing scope"):format(ft))
    else
      h.info(("no treesitter parser for %s: suggestions are asked for without an outline"):format(ft))
    end
  end
  local keys = require("pi-ide.core.config").values.suggestion.keys
  -- Mappings as the buffer the user came from sees them (buffer-local ones included).
  local in_buf = buf > 0 and vim.api.nvim_buf_is_valid(buf) and buf or vim.api.nvim_get_current_buf()
  for action, lhs in pairs(keys) do
    if lhs then
      local m = vim.api.nvim_buf_call(in_buf, function()
        return vim.fn.maparg(lhs, "i", false, true)
      end)
      local other = m.lhs and not (m.desc or ""):find("^pi%-ide")
      local fallback = other and falls_back_to_us(m, lhs)
      if fallback then
        h.ok(("%s (%s): %s"):format(lhs, action, fallback))
      elseif other then
        h.warn(
          ("%s (%s) in Insert mode is mapped by something else%s: pi-ide's mapping is used only if that one hands the key on"):format(
            lhs,
            action,
            m.buffer == 1 and " (buffer-local)" or ""
          ),
          { ("set suggestion.keys.%s to another key, or map <Plug>(PiIde...) yourself"):format(action) }
        )
      end
    end
  end
end

-- Whether `agent` is served now (its side in the core: its option on, or a launch of it) and
-- connected. An agent served as another (`served_as`) is told apart by its client's name.
local function served_text(agent, info)
  local core = agent.served_as or agent.name
  for _, c in ipairs(info.clients or {}) do
    if c.agent == core and (core == agent.name or (c.name or ""):lower():find(agent.name, 1, true)) then
      return ("served, connected (client #%d %s)"):format(c.id, c.name or "")
    end
  end
  local side = (info.served or {})[core]
  return side and ("served (%s), not connected"):format(side.lockfile or side.socket or "") or "not served"
end

-- Each agent's programs found on PATH (its terminal's and its chat's), and whether it is served.
local function check_agents_on_path(info)
  local agents = require("pi-ide.agents")
  local chat = require("pi-ide.features.chat.acp.agents")
  local found = 0
  local function say(program, what)
    local path = program and vim.fn.exepath(program) or ""
    if path ~= "" then
      h.ok(("%s (%s): %s"):format(program, what, path))
      found = found + 1
    end
  end
  for _, a in ipairs(agents.all()) do
    if a.cmd then
      say(agents.command(a.name, {})[1], (":PiIde open %s; %s"):format(a.name, served_text(a, info)))
    end
    local spec = a.acp and chat.get(a.name)
    if spec and spec.cmd[1] ~= (a.cmd and agents.command(a.name, {})[1]) then
      say(spec.cmd[1], ":PiIde chat " .. a.name)
    end
  end
  for _, name in ipairs(chat.names()) do
    if not agents.get(name) then
      say(chat.get(name).cmd[1], ":PiIde chat " .. name)
    end
  end
  if found == 0 then
    h.info("no agent's program found on PATH")
  end
end

-- :PiIde open: which agents can be started, and where it would run them.
local function check_terminal()
  local cfg = require("pi-ide.core.config").values.terminal
  local agents = require("pi-ide.agents")
  for _, name in ipairs(agents.launched()) do
    local cmd = agents.command(name, {})
    local missing = agents.missing(name, cmd)
    if missing then
      h.info((":PiIde open %s: %s"):format(name, missing))
    else
      h.ok((":PiIde open %s runs %s"):format(name, vim.fn.exepath(cmd[1])))
    end
  end
  if cfg.provider == "snacks" and not require("pi-ide.features.terminal.providers.snacks").available() then
    h.error('terminal.provider is "snacks" but snacks.nvim is not installed (use "auto" or "split")')
  elseif cfg.provider == "external" and not cfg.external then
    h.error('terminal.provider is "external" but terminal.external is not set (e.g. "tmux split-window -h %s")')
  end
end

-- Bytes `dir` takes on disk (its files' blocks, as du counts them).
local function disk_bytes(dir)
  local total = 0
  for name, kind in vim.fs.dir(dir, { depth = 8 }) do
    if kind == "file" then
      local st = vim.uv.fs_lstat(dir .. "/" .. name)
      total = total + (st and st.blocks * 512 or 0)
    end
  end
  return total
end

local function mib(bytes)
  return ("%.1f MiB"):format(bytes / 1048576)
end

-- How much disk the checkpoints take, per folder (each shadow names its folder in `folder`).
local function check_checkpoints_disk(dir, keep)
  local total, folders, largest, gone = 0, 0, nil, {}
  for key, kind in vim.fs.dir(dir) do
    if kind == "directory" then
      local bytes = disk_bytes(dir .. "/" .. key)
      local file = io.open(dir .. "/" .. key .. "/folder", "rb")
      local folder = file and file:read("*a") or key
      if file then
        file:close()
      end
      total, folders = total + bytes, folders + 1
      if not largest or bytes > largest.bytes then
        largest = { bytes = bytes, folder = folder }
      end
      if not vim.uv.fs_stat(folder) then
        table.insert(gone, dir .. "/" .. key)
      end
    end
  end
  if folders == 0 then
    return h.info("no checkpoint taken yet: they use no disk")
  end
  h.info(("checkpoints use %s on disk, for %d folder%s (the largest: %s, %s); each keeps its last %d turns (checkpoints.keep_turns)"):format(
    mib(total), folders, folders == 1 and "" or "s", vim.fn.fnamemodify(largest.folder, ":~"), mib(largest.bytes), keep
  ))
  if #gone > 0 then
    h.info(("%d of them are of folders that no longer exist: remove %s to free their space"):format(#gone, table.concat(gone, ", ")))
  end
end

-- The workspace's watch for what agents write by themselves (features/pending/).
local function check_pending()
  local pending = package.loaded["pi-ide.features.pending"]
  local said = pending and pending.health() or "not watching (no agent connected or running)"
  if said:find("^gave up") then
    h.warn("agents' own writes: " .. said, { "raise fs.inotify.max_user_watches (sysctl), or ignore large folders in .gitignore" })
  else
    h.info("agents' own writes: " .. said)
  end
end

local function check_checkpoints()
  local cfg = require("pi-ide.core.config").values.checkpoints
  if not cfg.enabled then
    return h.info("off (checkpoints.enabled = false): :PiIde changes and :PiIde undo have nothing new")
  end
  if vim.fn.executable("git") ~= 1 then
    return h.warn("no `git` on PATH: turns are not recorded, :PiIde changes and :PiIde undo cannot work")
  end
  local dir = vim.fn.stdpath("state") .. "/pi-ide/checkpoints"
  h.ok(("each agent turn is recorded (git %s), in %s"):format(
    vim.trim(vim.fn.system({ "git", "--version" })):gsub("^git version ", ""),
    dir
  ))
  check_checkpoints_disk(dir, cfg.keep_turns)
  check_pending()
end

function M.check()
  h.start("pi-ide.nvim")
  check_neovim()
  if not check_library() then
    return
  end
  h.start("server")
  check_server()
  h.start("suggestions")
  check_suggestions()
  -- Each agent's own section (lua/pi-ide/agents/).
  local info = require("pi-ide").info()
  for _, agent in ipairs(require("pi-ide.agents").all()) do
    if agent.health then
      h.start(agent.health_title)
      agent.health(info)
    end
  end
  h.start("agents found on PATH")
  check_agents_on_path(info)
  h.start("agents launched from Neovim")
  check_terminal()
  h.start("checkpoints (:PiIde changes, :PiIde undo)")
  check_checkpoints()
end

return M
