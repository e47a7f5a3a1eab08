-- Options: defaults, and a check of what the user passed to setup(). A bad key is named in a
-- message and ignored; the rest of the configuration still applies.
local M = {}

M.defaults = {
  -- Start the server when Neovim starts (after VimEnter, so startup is never slowed).
  auto_start = true,
  -- "off", "error", "warn", "info", "debug" or "trace"; the file is stdpath("log")/pi-ide.log.
  log_level = "info",
  -- The name Pi's /ide list shows for this editor; a string, or a function returning one.
  -- nil: "Neovim", plus the terminal pane when one is known (tmux, WezTerm, kitty).
  ide_name = nil,
  -- Frames larger than this many bytes are refused (the connection is closed with code 1009).
  max_message_size = 64 * 1024 * 1024,
  -- The agent waits for getDiagnostics before every model call. When Neovim cannot answer
  -- within this many milliseconds (a hit-enter prompt, a blocking input(), a long :!command),
  -- the server answers with the diagnostics Neovim last gave.
  diagnostics_timeout_ms = 500,
  -- selection_changed is sent once the cursor has been still this long (leaving visual mode
  -- sends at once).
  selection_debounce_ms = 100,
  -- The selected text sent to the agent is cut after this many lines.
  selection_max_lines = 1000,
  -- Also serve Claude Code (same wire format): a second lockfile in $CLAUDE_CONFIG_DIR/ide
  -- (or ~/.claude/ide) and its x-claude-code-ide-authorization header.
  claude_code = false,
  -- Reviews of the files the agent wants to write (openDiff).
  diff = {
    -- false: accept every proposal at once, without showing it.
    review = true,
    -- "tab": a new tab page; "vsplit": two new windows in the current tab.
    layout = "tab",
    -- Buffer-local keys in both panes of a review; false turns one off.
    keys = { accept = "<leader>pa", reject = "<leader>pr" },
  },
  -- Inline completions from the agent, shown as ghost text in Insert mode.
  suggestion = {
    -- Ask while typing (after debounce_ms without a keystroke); :PiIde toggle flips it.
    auto_trigger = true,
    debounce_ms = 75,
    -- An unanswered request ends quietly after this long.
    timeout_ms = 10000,
    -- How many alternatives to ask for (1 to 3).
    count = 3,
    -- "provider/id" to ask the agent to use; :PiIde model picks one.
    model = nil,
    -- Per filetype on/off; "*" for the rest.
    filetypes = { ["*"] = true, gitcommit = false, gitrebase = false, help = false },
    -- Larger buffers get no suggestions.
    max_file_bytes = 2 * 1024 * 1024,
    -- Hide the ghost text while a completion menu (built-in, nvim-cmp, blink.cmp) is open; it
    -- comes back when the menu closes. With blink.cmp, the "pi_ide" source (see :help
    -- pi-ide-blink) shows the suggestion in the menu instead.
    hide_during_completion = true,
    context = { before_lines = 20, after_lines = 10, outline_max_bytes = 4000, scope_max_bytes = 4000 },
    -- Insert-mode keys; false turns one off. Accept, word, line and dismiss act only while a
    -- suggestion is shown; otherwise the key does what it did before.
    keys = {
      accept = "<Tab>",
      accept_word = "<M-Right>",
      accept_line = "<M-C-Right>",
      next = "<M-]>",
      prev = "<M-[>",
      dismiss = "<C-]>",
      trigger = "<M-\\>",
    },
  },
}

local log_levels = { "off", "error", "warn", "info", "debug", "trace" }

local function whole_number(min, unit)
  return function(v)
    if v < min or v ~= math.floor(v) then
      return ("must be a whole number of %s, at least %d"):format(unit, min)
    end
  end
end

local function one_of(...)
  local allowed = { ... }
  return function(v)
    if not vim.tbl_contains(allowed, v) then
      return "must be one of " .. table.concat(allowed, ", ")
    end
  end
end

local function key_or_false(v)
  if v == true or v == "" then
    return "must be a key (like \"<leader>pa\") or false"
  end
end

local function ms(min)
  return whole_number(min, "milliseconds")
end

local key = { { "string", "boolean" }, key_or_false }

-- key -> { types accepted, optional extra check returning an error text, fields = nested schema }
local schema = {
  suggestion = {
    { "table" },
    fields = {
      auto_trigger = { { "boolean" } },
      debounce_ms = { { "number" }, ms(0) },
      timeout_ms = { { "number" }, ms(1) },
      count = {
        { "number" },
        function(v)
          if v < 1 or v > 3 or v ~= math.floor(v) then
            return "must be 1, 2 or 3"
          end
        end,
      },
      model = { { "nil", "string" } },
      filetypes = {
        { "table" },
        function(v)
          for ft, on in pairs(v) do
            if type(ft) ~= "string" or type(on) ~= "boolean" then
              return "must map filetype names (or \"*\") to true or false"
            end
          end
        end,
      },
      max_file_bytes = { { "number" }, whole_number(0, "bytes") },
      hide_during_completion = { { "boolean" } },
      context = {
        { "table" },
        fields = {
          before_lines = { { "number" }, whole_number(0, "lines") },
          after_lines = { { "number" }, whole_number(0, "lines") },
          outline_max_bytes = { { "number" }, whole_number(0, "bytes") },
          scope_max_bytes = { { "number" }, whole_number(0, "bytes") },
        },
      },
      keys = {
        { "table" },
        fields = {
          accept = key,
          accept_word = key,
          accept_line = key,
          next = key,
          prev = key,
          dismiss = key,
          trigger = key,
        },
      },
    },
  },
  diff = {
    { "table" },
    fields = {
      review = { { "boolean" } },
      layout = { { "string" }, one_of("tab", "vsplit") },
      keys = {
        { "table" },
        fields = {
          accept = { { "string", "boolean" }, key_or_false },
          reject = { { "string", "boolean" }, key_or_false },
        },
      },
    },
  },
  auto_start = { { "boolean" } },
  claude_code = { { "boolean" } },
  log_level = { { "string" }, one_of(unpack(log_levels)) },
  ide_name = {
    { "nil", "string", "function" },
    function(v)
      if v == "" then
        return "must not be empty"
      end
    end,
  },
  diagnostics_timeout_ms = { { "number" }, whole_number(1, "milliseconds") },
  max_message_size = { { "number" }, whole_number(1024, "bytes") },
  selection_debounce_ms = { { "number" }, whole_number(0, "milliseconds") },
  selection_max_lines = { { "number" }, whole_number(1, "lines") },
}

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

-- Checks one table of options against `fields`, merging the good ones into `merged`.
local function check_fields(prefix, opts, fields, merged, errors)
  for key, value in pairs(opts) do
    local name = prefix .. tostring(key)
    local rule = type(key) == "string" and fields[key]
    if not rule then
      table.insert(errors, ("unknown option '%s'%s"):format(name, suggestion(tostring(key), fields)))
    else
      local kinds, check = rule[1], rule[2]
      local msg
      if not vim.tbl_contains(kinds, type(value)) then
        msg = ("must be a %s, got a %s"):format(table.concat(kinds, " or "), type(value))
      elseif check and value ~= nil then
        msg = check(value)
      end
      if msg then
        table.insert(errors, ("option '%s' %s"):format(name, msg))
      elseif rule.fields then
        check_fields(name .. ".", value, rule.fields, merged[key], errors)
      elseif type(value) == "table" then
        -- A table option without fields (filetypes) is merged key by key.
        merged[key] = vim.tbl_extend("force", merged[key] or {}, value)
      else
        merged[key] = value
      end
    end
  end
end

--- Checks `opts` and returns the merged configuration and a list of error texts.
function M.resolve(opts)
  local errors = {}
  local merged = vim.deepcopy(M.defaults)
  if opts == nil then
    return merged, errors
  end
  if type(opts) ~= "table" then
    return merged, { ("setup() takes a table of options, got a %s"):format(type(opts)) }
  end
  check_fields("", opts, schema, merged, errors)
  table.sort(errors)
  return merged, errors
end

M.values = vim.deepcopy(M.defaults)

--- Applies setup(opts); reports every bad key at once.
function M.setup(opts)
  local merged, errors = M.resolve(opts)
  M.values = merged
  if #errors > 0 then
    require("pi-ide.log").notify(
      "configuration problem (ignored, defaults kept):\n  " .. table.concat(errors, "\n  "),
      vim.log.levels.ERROR
    )
  end
  return #errors == 0
end

--- The name for the lockfile's ideName.
function M.ide_name()
  local v = M.values.ide_name
  if type(v) == "function" then
    local ok, name = pcall(v)
    if ok and type(name) == "string" and name ~= "" then
      return name
    end
    require("pi-ide.log").notify("option 'ide_name' function did not return a name; using the default", vim.log.levels.WARN)
  elseif type(v) == "string" then
    return v
  end
  local pane = vim.env.TMUX_PANE and ("tmux " .. vim.env.TMUX_PANE)
    or vim.env.WEZTERM_PANE and ("wezterm " .. vim.env.WEZTERM_PANE)
    or vim.env.KITTY_WINDOW_ID and ("kitty " .. vim.env.KITTY_WINDOW_ID)
  return pane and ("Neovim (%s)"):format(pane) or "Neovim"
end

return M
