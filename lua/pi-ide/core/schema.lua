-- The tree of every option (its default, types and check) and the check of what setup() was
-- given against it. config.lua loads it when options are checked and lets it go afterwards:
-- the rules and their checks are ~45 KiB of Lua heap that nothing needs in between.
local S = {}

local log_levels = { "off", "error", "warn", "info", "debug", "trace" }

local o = require("pi-ide.core.options")
local opt, ms, key, one_of, whole_number = o.opt, o.ms, o.key, o.one_of, o.whole_number
local fraction_or_columns = o.fraction_or_columns
local agents = require("pi-ide.core.parts").get("agents")

-- terminal.agents: per agent, cmd (the argv; :PiIde open's arguments are added) and env.
local function check_agent(name, a)
  if not vim.tbl_contains(agents.launched(), name) then
    return ("has no agent %s (only %s)"):format(tostring(name), table.concat(agents.launched(), ", "))
  elseif type(a) ~= "table" then
    return ("%s must be a table { cmd = {...}, env = {...} }"):format(name)
  end
  for k, v in pairs(a) do
    if k == "cmd" and not o.strings_only(v) then
      return ("%s.cmd must be a list of strings, the program first"):format(name)
    elseif k == "env" and not o.string_map(v) then
      return ("%s.env must map variable names to strings"):format(name)
    elseif k ~= "cmd" and k ~= "env" then
      return ("%s has no option %s (only cmd, env)"):format(name, tostring(k))
    end
  end
end

local function agents_table(v)
  for name, a in pairs(v) do
    local problem = check_agent(name, a)
    if problem then
      return problem
    end
  end
end

-- chat.agents: per ACP agent, how it runs.
local ACP_FIELDS = { cmd = true, env = true, label = true, mcp = true, install = true, writes_itself = true }
local function acp_agents_table(v)
  for name, a in pairs(v) do
    if type(name) ~= "string" or not name:match("^[%w_-]+$") or name == "pi" then
      return ("has a name that cannot be an agent's: %s"):format(tostring(name))
    elseif type(a) ~= "table" then
      return ("%s must be a table { cmd = {...}, env = {...} }"):format(name)
    end
    for k, x in pairs(a) do
      if not ACP_FIELDS[k] then
        return ("%s has no option %s (only cmd, env, label, mcp, install, writes_itself)"):format(name, tostring(k))
      elseif k == "cmd" and not (o.strings_only(x) and #x > 0) then
        return ("%s.cmd must be a list of strings, the program first"):format(name)
      elseif k == "env" and not o.string_map(x) then
        return ("%s.env must map variable names to strings"):format(name)
      elseif k == "mcp" and x ~= false and x ~= "stdio" then
        return ("%s.mcp must be \"stdio\" or false"):format(name)
      elseif (k == "label" or k == "install") and type(x) ~= "string" then
        return ("%s.%s must be a string"):format(name, k)
      elseif k == "writes_itself" and type(x) ~= "boolean" then
        return ("%s.writes_itself must be true or false"):format(name)
      end
    end
  end
end

-- How each agent runs by default: its program, nothing added to the environment.
local function agent_defaults()
  local out = {}
  for _, name in ipairs(agents.launched()) do
    out[name] = { cmd = vim.deepcopy(agents.get(name).cmd), env = {} }
  end
  return out
end

-- review.when: "before" or "after", or per agent { default = ..., <agent> = ... }.
local WHEN = { "before", "after" }
local function when_check(v)
  if type(v) == "string" then
    return one_of(unpack(WHEN))(v)
  end
  for name, when in pairs(v) do
    if type(name) ~= "string" or not name:match("^[%w_-]+$") then
      return ("has a key that cannot be an agent's: %s"):format(tostring(name))
    elseif not vim.tbl_contains(WHEN, when) then
      return ("%s must be \"before\" or \"after\""):format(name)
    end
  end
end

local spec = {
  -- Start the server when Neovim has started (after VimEnter, so startup is never slowed).
  auto_start = opt(true, { "boolean" }),
  -- How much goes to the log file, stdpath("log")/pi-ide.log (:PiIde log opens it). Messages
  -- below the level are neither written nor formatted.
  log_level = opt("info", { "string" }, one_of(unpack(log_levels))),
  -- The name the agent's /ide list shows for this editor: a string, or a function returning
  -- one. nil: "Neovim", or for example "Neovim (tmux %3)" inside tmux, WezTerm or kitty, so
  -- that two editors in one folder can be told apart.
  -- @type string|fun():string
  ide_name = opt(nil, { "nil", "string", "function" }, function(v)
    if v == "" then
      return "must not be empty"
    end
  end),
  -- A message larger than this many bytes is read and dropped, the request in it answered (a
  -- review rejected), and that client's connection closed with code 1009; other clients and
  -- the editor are not affected.
  max_message_size = opt(64 * 1024 * 1024, { "number" }, whole_number(1024, "bytes")),
  -- The agent asks for diagnostics before every model call and waits without a timeout. The
  -- core answers from a snapshot Neovim keeps current, without Neovim's main loop; only in the
  -- moment after a change does Neovim answer itself. If it cannot run scheduled work right then
  -- (a hit-enter prompt, a blocking input(), a long :!cmd), the core answers after this many
  -- milliseconds with what it has, so the agent is never stalled by the editor.
  diagnostics_timeout_ms = ms(500, 1),
  -- The selection is sent once the cursor has been still this many milliseconds (leaving
  -- Visual mode sends it at once).
  selection_debounce_ms = ms(100, 0),
  -- The selected text sent is cut after this many lines (the range sent is still the whole
  -- selection).
  selection_max_lines = opt(1000, { "number" }, whole_number(1, "lines")),
  -- Reviews of the files the agent wants to write (openDiff): how they look and behave. Was
  -- `diff` (with `review` for `enabled`), still accepted until the next release.
  review = {
    -- false: accept every proposal at once, without showing it (the agent writes unreviewed).
    -- Takes effect at once when setup() is called again while the server runs.
    enabled = opt(true, { "boolean" }),
    -- When you decide an agent's change. "before": its review opens and the file is written
    -- only once you accept. "after": the agent is answered at once as if you had accepted its
    -- proposal unchanged, no review opens, and the write that follows is a pending change that
    -- you keep or undo in the file's own window, hunk by hunk (:help pi-ide-review-when). A file
    -- outside Neovim's current folder, or reached through a link, is still reviewed before. Per
    -- agent, by its name in :PiIde open or :PiIde chat: { default = "before", pi = "after" }.
    -- @type "before"|"after"|table<string, "before"|"after">
    when = opt("before", { "string", "table" }, when_check),
    -- "tab": a new tab page; "vsplit": two new windows in the current tab; "inline": inside the
    -- file's own window (removed lines highlighted, added ones as virtual lines under them; not
    -- editable there). A file not open in this tab, a new file, a buffer with unsaved edits, an
    -- agent that writes the file itself or a change of more than 3,000 lines goes to a tab.
    layout = opt("tab", { "string" }, one_of("tab", "vsplit", "inline")),
    -- A review that opens by itself takes a typed accept (:w, ZZ, your save key, the accept
    -- key) only once it has been on screen this long: one begun sooner was aimed elsewhere and
    -- accepts nothing. One that becomes ready while you type opens without taking the focus
    -- (:PiIde review goes to it, and there an accept counts at once).
    seen_ms = ms(400, 0),
    -- Buffer-local Normal-mode keys in both panes of a review; false turns one off. Inline: in
    -- the file's buffer while its review is up, except a key you mapped in that buffer yourself.
    keys = {
      -- Accept the review, as :w in its proposal does.
      accept = key("<leader>pa"),
      -- Reject the review.
      reject = key("<leader>pr"),
      -- Accept the hunk under the cursor (:PiIde hunk accept): the proposal's lines again.
      accept_hunk = key("<leader>ha"),
      -- Reject the hunk under the cursor (:PiIde hunk reject): the file's lines there.
      reject_hunk = key("<leader>hr"),
      -- Go to the next hunk (in the review's panes only; Neovim's ]c works too).
      next_hunk = key("]h"),
      -- Go to the previous hunk (in the review's panes only; Neovim's [c works too).
      prev_hunk = key("[h"),
    },
  },
  -- Inline completions from the agent, shown as ghost text in Insert mode.
  suggestion = {
    -- Ask while typing (after debounce_ms without a keystroke); :PiIde toggle flips it.
    auto_trigger = opt(true, { "boolean" }),
    -- Ask once no key was typed this many milliseconds.
    debounce_ms = ms(75, 0),
    -- A request still unanswered after this many milliseconds ends quietly (and is cancelled
    -- on the wire).
    timeout_ms = ms(10000, 1),
    -- How many alternatives to ask for (1 to 3).
    -- @type 1|2|3
    count = opt(3, { "number" }, function(v)
      if v < 1 or v > 3 or v ~= math.floor(v) then
        return "must be 1, 2 or 3"
      end
    end),
    -- "provider/id" of the model to ask for; nil: the agent's choice. :PiIde model picks one
    -- for the session.
    model = opt(nil, { "nil", "string" }),
    -- Per filetype on/off; "*" for the rest. Merged with the default, key by key.
    -- @type table<string, boolean>
    filetypes = opt({ ["*"] = true, gitcommit = false, gitrebase = false, help = false }, { "table" }, function(v)
      for ft, on in pairs(v) do
        if type(ft) ~= "string" or type(on) ~= "boolean" then
          return "must map filetype names (or \"*\") to true or false"
        end
      end
    end),
    -- Buffers larger than this many bytes get no suggestions.
    max_file_bytes = opt(2 * 1024 * 1024, { "number" }, whole_number(0, "bytes")),
    -- Hide the ghost text while a completion menu (built-in, nvim-cmp, blink.cmp) is open; it
    -- comes back when the menu closes. false draws it over the menu too. With blink.cmp, the
    -- "pi_ide" source (see :help pi-ide-blink) shows the suggestion in the menu instead.
    hide_during_completion = opt(true, { "boolean" }),
    -- What is sent around the cursor.
    context = {
      -- Lines before the cursor.
      before_lines = opt(20, { "number" }, whole_number(0, "lines")),
      -- Lines after the cursor.
      after_lines = opt(10, { "number" }, whole_number(0, "lines")),
      -- Bytes of the treesitter outline of the file's declarations (with a parser).
      outline_max_bytes = opt(4000, { "number" }, whole_number(0, "bytes")),
      -- Bytes of the enclosing function or class (with a parser).
      scope_max_bytes = opt(4000, { "number" }, whole_number(0, "bytes")),
    },
    -- Insert-mode keys (see :help pi-ide-keys); false turns one off. Accept, word, line and
    -- dismiss act only while a suggestion is shown; otherwise the key does what it did before.
    keys = {
      -- Accept the whole suggestion.
      accept = key("<Tab>"),
      -- Accept its next word.
      accept_word = key("<M-Right>"),
      -- Accept the rest of its line.
      accept_line = key("<M-C-Right>"),
      -- Show the next alternative.
      next = key("<M-]>"),
      -- Show the previous alternative.
      prev = key("<M-[>"),
      -- Hide the suggestion.
      dismiss = key("<C-]>"),
      -- Ask for a suggestion now.
      trigger = key("<M-\\>"),
    },
  },
  -- Agents launched from Neovim (:PiIde open), already connected to this Neovim.
  terminal = {
    -- The agent :PiIde open starts when given none.
    agent = opt(agents.launched()[1], { "string" }, one_of(unpack(agents.launched()))),
    -- Where it runs. "split": a :terminal in a vertical split; "float"; "snacks": snacks.nvim's
    -- terminal; "external": a command of yours (external); "auto": snacks when installed,
    -- else split.
    provider = opt("auto", { "string" }, one_of("auto", "split", "float", "snacks", "external")),
    -- The split's side.
    side = opt("right", { "string" }, one_of("left", "right")),
    -- The split's width: a fraction of the columns below 1, else columns; never under 40
    -- columns (or half the screen).
    width = opt(0.4, { "number" }, fraction_or_columns),
    -- The float.
    float = {
      -- A fraction of the screen below 1, else cells.
      width = opt(0.85, { "number" }, fraction_or_columns),
      -- A fraction of the screen below 1, else cells.
      height = opt(0.85, { "number" }, fraction_or_columns),
      -- Its border, as nvim_open_win() takes it.
      border = opt("rounded", { "string" }),
    },
    -- For "external": a command in which %s is replaced by the agent's command line (one shell
    -- word), run by your shell: "tmux split-window -h %s", "wezterm cli split-pane -- sh -c %s".
    -- Neovim does not track an external agent: :PiIde open starts another.
    external = opt(nil, { "nil", "string" }, function(v)
      if not v:find("%s", 1, true) then
        return "must contain %s (where the agent's command goes)"
      end
    end),
    -- Close the agent's window when it exits with status 0 (after a failure it stays, to be
    -- read).
    close_on_exit = opt(true, { "boolean" }),
    -- :PiIde send and :PiIde add put the cursor in the agent's terminal after sending.
    focus_after_send = opt(true, { "boolean" }),
    -- How each agent runs: cmd is the program and its first arguments, env is added to
    -- Neovim's environment. Merged agent by agent with the defaults.
    -- @type table<string, { cmd?: string[], env?: table<string, string> }>
    agents = opt(agent_defaults(), { "table" }, agents_table),
  },
  -- The chat window (:PiIde chat): Pi in RPC mode, run as terminal.agents.pi says with
  -- "--mode rpc" added, and ACP agents (:PiIde chat {agent}).
  chat = {
    -- "split": at the side of the screen; "float": in the middle.
    provider = opt("split", { "string" }, one_of("split", "float")),
    -- The split's side.
    side = opt("right", { "string" }, one_of("left", "right")),
    -- The split's width: a fraction of the columns below 1, else columns; never under 40
    -- columns (or half the screen).
    width = opt(0.4, { "number" }, fraction_or_columns),
    -- The float.
    float = {
      -- A fraction of the screen below 1, else cells.
      width = opt(0.8, { "number" }, fraction_or_columns),
      -- A fraction of the screen below 1, else cells.
      height = opt(0.8, { "number" }, fraction_or_columns),
      -- Its border, as nvim_open_win() takes it.
      border = opt("rounded", { "string" }),
    },
    -- Lines of the prompt area under the conversation.
    prompt_height = opt(3, { "number" }, function(v)
      if v < 1 or v ~= math.floor(v) then
        return "must be a whole number of lines, at least 1"
      end
    end),
    -- A prompt sent while Pi works: "steer" (delivered after its current tool calls) or
    -- "follow_up" (delivered when Pi is done).
    while_working = opt("steer", { "string" }, one_of("steer", "follow_up")),
    -- Lines of a tool's output shown in its block; the rest is counted ("… N more lines").
    tool_lines = opt(12, { "number" }, function(v)
      if v < 0 or v ~= math.floor(v) then
        return "must be a whole number of lines"
      end
    end),
    -- Highlight the conversation with treesitter's Markdown parser instead of Vim's Markdown
    -- syntax: richer, but it reparses the whole conversation on every streamed draw (slow in
    -- a long chat).
    treesitter = opt(false, { "boolean" }),
    -- Arguments added to Pi's command line after "--mode rpc" (e.g. { "--model", "sonnet" }).
    -- @type string[]
    args = opt({}, { "table" }, function(v)
      if #v > 0 and not o.strings_only(v) then
        return "must be a list of strings"
      end
    end),
    -- ACP agents for :PiIde chat {name}, beside those whose module says how (lua/pi-ide/agents/),
    -- or changes to those, by name: cmd is the program and its arguments, env is added to
    -- Neovim's environment, label names it, mcp says whether this Neovim's tools go to it as a
    -- stdio MCP server, install what to run when it is missing, writes_itself that it writes
    -- files itself after an allow and also sends that write as fs/write_text_file (a mirror,
    -- answered without writing; else such a write is the chat's to make).
    -- @type table<string, { cmd?: string[], env?: table<string, string>, label?: string, mcp?: "stdio"|false, install?: string, writes_itself?: boolean }>
    agents = opt({}, { "table" }, acp_agents_table),
  },
  -- The workspace recorded at each agent turn, for :PiIde changes and :PiIde undo.
  checkpoints = {
    -- Record the workspace at each agent turn.
    enabled = opt(true, { "boolean" }),
    -- An agent in a terminal starts a turn with its first request after this many
    -- milliseconds of quiet, or with a prompt typed in it this long after a turn began.
    idle_ms = ms(20000, 0),
    -- A workspace with more files than this is not checkpointed (a message says so; the turn
    -- goes on).
    max_files = opt(100000, { "number" }, whole_number(1, "files")),
    -- A file larger than this many MiB is left out of checkpoints (its changes are neither
    -- listed nor undone).
    max_file_mb = opt(16, { "number" }, whole_number(0, "MiB")),
    -- A checkpoint that would store more new or changed MiB than this is skipped, with a
    -- message.
    max_new_mb = opt(256, { "number" }, whole_number(0, "MiB")),
    -- Turns kept per folder (:PiIde changes N, :PiIde undo): older ones, and what only they
    -- held, are pruned from the shadow repository.
    keep_turns = opt(50, { "number" }, whole_number(1, "turns")),
  },
}

-- Options of the agents' own (serving one from the start, and how), at the top level.
for _, a in ipairs(agents.all()) do
  for name, rule in pairs(a.options or {}) do
    spec[name] = rule
  end
end

--- The tree of every option, for what reads it whole (the help's and annotations' coverage).
S.spec = spec

-- The defaults, read from the tree.
local function defaults_of(node)
  local out = {}
  for name, rule in pairs(node) do
    if rule.is_option then
      out[name] = vim.deepcopy(rule.default)
    else
      out[name] = defaults_of(rule)
    end
  end
  return out
end

--- The defaults, a fresh copy.
---@return PiIde.Config
function S.defaults()
  return defaults_of(spec)
end

local function distance(a, b)
  local prev = {}
  for j = 0, #b do
    prev[j] = j
  end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

local function suggestion(key, fields)
  local best, best_d
  for name in pairs(fields) do
    local d = distance(key, name)
    if d <= 3 and (not best_d or d < best_d) then
      best, best_d = name, d
    end
  end
  return best and (" (did you mean '%s'?)"):format(best) or ""
end

-- Checks one table of options against a node of the tree, merging the good ones into `merged`.
local function check_fields(prefix, opts, node, merged, errors)
  for key, value in pairs(opts) do
    local name = prefix .. tostring(key)
    local rule = type(key) == "string" and node[key]
    if not rule then
      table.insert(errors, ("unknown option '%s'%s"):format(name, suggestion(tostring(key), node)))
    elseif not rule.is_option then
      -- A group of options (review, suggestion, keys...).
      if type(value) ~= "table" then
        table.insert(errors, ("option '%s' must be a table, got a %s"):format(name, type(value)))
      else
        check_fields(name .. ".", value, rule, merged[key], errors)
      end
    else
      local msg
      if not vim.tbl_contains(rule.types, type(value)) then
        msg = ("must be a %s, got a %s"):format(table.concat(rule.types, " or "), type(value))
      elseif rule.check and value ~= nil then
        msg = rule.check(value)
      end
      if msg then
        table.insert(errors, ("option '%s' %s"):format(name, msg))
      elseif type(value) == "table" then
        -- A table-valued option (filetypes) is merged key by key; over a boolean default
        -- (mcp = true) the table is the whole value.
        merged[key] = vim.tbl_extend("force", type(merged[key]) == "table" and merged[key] or {}, value)
      else
        merged[key] = value
      end
    end
  end
end

-- The option `diff` is now `review`, and its `review` is `enabled`: `opts` with the old names
-- written as the new ones (a copy; `review` wins when both are given), and what to tell the user.
local function renamed(opts)
  local old = opts.diff
  if old == nil then
    return opts
  end
  local new = vim.tbl_extend("force", {}, opts)
  new.diff = nil
  local said = "the option `diff` is now `review`"
    .. (type(old) == "table" and old.review ~= nil and ", its `review` now `enabled`" or "")
  if opts.review ~= nil then
    return new, said .. "; both are given: `review` is used, `diff` is ignored"
  end
  if type(old) == "table" and old.review ~= nil and old.enabled == nil then
    old = vim.tbl_extend("force", {}, old, { enabled = old.review })
    old.review = nil
  end
  new.review = old
  return new, said .. " (the old name works until the next release)"
end

--- Checks `opts` and returns the merged configuration, a list of error texts, and what to tell
--- of an old option name used (or nil).
function S.resolve(opts)
  local errors = {}
  local merged = defaults_of(spec)
  if opts == nil then
    return merged, errors
  end
  if type(opts) ~= "table" then
    return merged, { ("setup() takes a table of options, got a %s"):format(type(opts)) }
  end
  local opts_now, old_name = renamed(opts)
  check_fields("", opts_now, spec, merged, errors)
  table.sort(errors)
  return merged, errors, old_name
end

return S
