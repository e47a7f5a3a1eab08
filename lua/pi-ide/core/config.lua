-- Options: the values in force and setup(), checked against the tree in core/schema.lua. A bad
-- key is named in a message and ignored; the rest of the configuration still applies.
local M = {}

---@class PiIde.Config
---@field auto_start? boolean Start the server when Neovim starts (default true).
---@field log_level? "off"|"error"|"warn"|"info"|"debug"|"trace" Log file level (default "info").
---@field ide_name? string|fun():string The name Pi's /ide list shows (default "Neovim", plus the terminal pane).
---@field max_message_size? integer Larger frames close that connection with 1009 (default 64 MiB).
---@field diagnostics_timeout_ms? integer A busy Neovim's getDiagnostics is answered from the snapshot after this (default 500).
---@field selection_debounce_ms? integer The selection is sent once the cursor is still this long (default 100).
---@field selection_max_lines? integer The selected text sent is cut after this many lines (default 1000).
---@field claude_code? boolean Also serve Claude Code (default false).
---@field copilot? boolean|{ trust_workspace?: boolean } Also serve the GitHub Copilot CLI (default false).
---@field mcp? boolean|{ save_document?: boolean, close_tab?: boolean } Let any MCP client reach this Neovim through pi-ide-mcp (default true).
---@field review? PiIde.ReviewConfig Reviews of the agent's writes (was `diff`, accepted until the next release).
---@field suggestion? PiIde.SuggestionConfig Ghost-text completions.
---@field terminal? PiIde.TerminalConfig Agents launched from Neovim (:PiIde open).
---@field chat? PiIde.ChatConfig The chat window driving Pi in RPC mode (:PiIde chat).
---@field checkpoints? PiIde.CheckpointsConfig The workspace recorded at each agent turn (:PiIde changes, :PiIde undo).

---@class PiIde.TerminalConfig
---@field agent? "pi"|"claude"|"copilot" What :PiIde open starts with no argument (default "pi").
---@field provider? "auto"|"split"|"float"|"snacks"|"external" Where it runs (default "auto": snacks when installed, else split).
---@field side? "left"|"right" The split's side (default "right").
---@field width? number The split's width: a fraction of the columns below 1, else columns; at least 40 (default 0.4).
---@field float? { width?: number, height?: number, border?: string } The float's size (fractions below 1, else cells) and border.
---@field external? string For "external": a command with %s, e.g. "tmux split-window -h %s".
---@field close_on_exit? boolean Close the window when the agent exits cleanly (default true).
---@field focus_after_send? boolean :PiIde send/add focus the agent's terminal (default true).
---@field agents? table<string, { cmd?: string[], env?: table<string, string> }> How each agent is run.

---@class PiIde.ChatConfig
---@field provider? "split"|"float" Where the chat opens (default "split").
---@field side? "left"|"right" The split's side (default "right").
---@field width? number The split's width: a fraction of the columns below 1, else columns (default 0.4).
---@field float? { width?: number, height?: number, border?: string } The float's size and border.
---@field prompt_height? integer Lines of the prompt area (default 3).
---@field while_working? "steer"|"follow_up" What a prompt sent while Pi works does (default "steer").
---@field tool_lines? integer Lines of a tool's output shown (default 12).
---@field treesitter? boolean Treesitter's Markdown highlighting instead of Vim's syntax (default false).
---@field args? string[] Added to Pi's command line after "--mode rpc".
---@field agents? table<string, { cmd?: string[], env?: table<string, string>, label?: string, mcp?: "stdio"|false, install?: string }> ACP agents for :PiIde chat {name} (claude, copilot, gemini are known).

---@class PiIde.CheckpointsConfig
---@field enabled? boolean Record the workspace at each agent turn (default true).
---@field idle_ms? integer An agent in a terminal starts a turn with its first request after this much quiet (default 20000).
---@field max_files? integer More files in the workspace than this: the checkpoint is skipped (default 100000).
---@field max_file_mb? integer A file larger than this is left out of checkpoints (default 16).
---@field max_new_mb? integer A checkpoint that would store more new MiB than this is skipped (default 256).
---@field keep_turns? integer Turns kept per folder; older ones are pruned (default 50).

---@class PiIde.ReviewConfig
---@field enabled? boolean false: accept every proposal at once, unseen (default true; was `diff.review`).
---@field layout? "tab"|"vsplit" Where a review opens (default "tab").
---@field keys? { accept?: string|false, reject?: string|false } Buffer-local keys in both panes.

---@class PiIde.SuggestionConfig
---@field auto_trigger? boolean Ask while typing (default true).
---@field debounce_ms? integer Ask once no key was typed this long (default 75).
---@field timeout_ms? integer An unanswered request ends quietly after this (default 10000).
---@field count? 1|2|3 Alternatives to ask for (default 3).
---@field model? string "provider/id" to ask the agent for (default: the agent's choice).
---@field filetypes? table<string, boolean> Per filetype on/off; "*" for the rest.
---@field max_file_bytes? integer Larger buffers get none (default 2 MiB).
---@field hide_during_completion? boolean Hide the ghost text under a completion menu (default true).
---@field context? { before_lines?: integer, after_lines?: integer, outline_max_bytes?: integer, scope_max_bytes?: integer }
---@field keys? PiIde.SuggestionKeys Insert-mode keys; false turns one off.

---@class PiIde.SuggestionKeys
---@field accept? string|false
---@field accept_word? string|false
---@field accept_line? string|false
---@field next? string|false
---@field prev? string|false
---@field dismiss? string|false
---@field trigger? string|false

-- The schema, loaded once for what runs in this turn of the loop (loading the plugin and its
-- setup() come together), then left to the collector.
local loaded_schema
local function schema()
  if not loaded_schema then
    loaded_schema = require("pi-ide.core.schema")
    package.loaded["pi-ide.core.schema"] = nil
    vim.schedule(function()
      loaded_schema = nil
    end)
  end
  return loaded_schema
end

--- Checks `opts` and returns the merged configuration and a list of error texts.
function M.resolve(opts)
  return schema().resolve(opts)
end

-- M.spec (the tree of every option) and M.defaults, for what reads them whole: the schema's.
setmetatable(M, {
  __index = function(_, key)
    if key == "spec" then
      return schema().spec
    elseif key == "defaults" then
      return schema().defaults()
    end
  end,
})

---@type PiIde.Config
M.values = schema().defaults()

-- Whether the user was told of an old option name (once is enough).
local told_old_name = false

--- Applies setup(opts); reports every bad key at once.
---@param opts? PiIde.Config
function M.setup(opts)
  local merged, errors, old_name = M.resolve(opts)
  M.values = merged
  if old_name and not told_old_name then
    told_old_name = true
    require("pi-ide.core.log").notify(old_name, vim.log.levels.WARN)
  end
  if #errors > 0 then
    require("pi-ide.core.log").notify(
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
    require("pi-ide.core.log").notify("option 'ide_name' function did not return a name; using the default", vim.log.levels.WARN)
  elseif type(v) == "string" then
    return v
  end
  local pane = vim.env.TMUX_PANE and ("tmux " .. vim.env.TMUX_PANE)
    or vim.env.WEZTERM_PANE and ("wezterm " .. vim.env.WEZTERM_PANE)
    or vim.env.KITTY_WINDOW_ID and ("kitty " .. vim.env.KITTY_WINDOW_ID)
  return pane and ("Neovim (%s)"):format(pane) or "Neovim"
end

return M
