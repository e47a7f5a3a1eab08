-- Where the chat shows: the conversation above a small prompt area, in a split at the side of
-- the screen or in a float. Both buffers outlive their windows: hidden and shown again, the
-- conversation and an unsent prompt come back.
local M = {}

local function cfg()
  return require("pi-ide.core.config").values.chat
end

-- Sized as the agent's terminal is: fractions or cells, at least 40 columns for the split.
local native = require("pi-ide.features.terminal.providers.native")
local size = native.size

local function set_local(win, opts)
  for name, value in pairs(opts) do
    vim.api.nvim_set_option_value(name, value, { win = win, scope = "local" })
  end
end

local CONVERSATION = {
  number = false,
  relativenumber = false,
  signcolumn = "no",
  spell = false,
  wrap = true,
  linebreak = true,
  foldmethod = "manual",
  foldtext = "v:lua.require'pi-ide.features.chat.view'.foldtext()",
  foldlevel = 0,
  foldenable = true,
  conceallevel = 2,
}

local PROMPT = { number = false, relativenumber = false, signcolumn = "no", spell = false, wrap = true, winfixheight = true }

-- The split: conversation at the side of the whole screen, the prompt under it.
local function open_split(conv_buf, prompt_buf)
  local width = native.split_width(cfg().width)
  local conv = vim.api.nvim_open_win(conv_buf, false, { split = cfg().side, win = -1, width = width })
  local prompt = vim.api.nvim_open_win(prompt_buf, true, { split = "below", win = conv, height = cfg().prompt_height })
  set_local(conv, { winfixwidth = true })
  return conv, prompt
end

-- The float: the conversation framed in the middle, the prompt framed under it.
local function open_float(conv_buf, prompt_buf)
  local f = cfg().float
  local lines = vim.o.lines - vim.o.cmdheight - 1
  local w, h = size(f.width, vim.o.columns), size(f.height, lines)
  local ph = math.min(cfg().prompt_height, math.max(1, h - 4))
  local ch = math.max(1, h - ph - 2)
  local row, col = math.floor((lines - h) / 2), math.floor((vim.o.columns - w) / 2)
  local conv = vim.api.nvim_open_win(conv_buf, false, {
    relative = "editor", width = w, height = ch, row = row, col = col, border = f.border, style = "minimal",
  })
  local prompt = vim.api.nvim_open_win(prompt_buf, true, {
    relative = "editor", width = w, height = ph, row = row + ch + 2, col = col, border = f.border, style = "minimal",
  })
  return conv, prompt
end

--- The chat's windows in this tab page: conversation, prompt (either may be nil).
function M.windows(conv_buf, prompt_buf)
  local conv, prompt
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local b = vim.api.nvim_win_get_buf(win)
    if b == conv_buf then
      conv = win
    elseif b == prompt_buf then
      prompt = win
    end
  end
  return conv, prompt
end

function M.visible(conv_buf, prompt_buf)
  local conv, prompt = M.windows(conv_buf, prompt_buf)
  return conv ~= nil or prompt ~= nil
end

--- Opens both windows (what is open already is closed first, so the layout is whole) and
--- puts the cursor in the prompt. Returns the conversation's window, or nil and why.
function M.open(conv_buf, prompt_buf)
  M.hide(conv_buf, prompt_buf)
  local open = cfg().provider == "float" and open_float or open_split
  local ok, conv, prompt = pcall(open, conv_buf, prompt_buf)
  if not ok then
    M.hide(conv_buf, prompt_buf)
    return nil, tostring(conv)
  end
  set_local(conv, CONVERSATION)
  set_local(prompt, PROMPT)
  require("pi-ide.features.chat.view").refold(conv)
  -- The view starts at the end of the conversation.
  pcall(vim.api.nvim_win_set_cursor, conv, { vim.api.nvim_buf_line_count(conv_buf), 0 })
  return conv
end

--- Closes the chat's windows in this tab page. The last window of a tab page cannot close: it
--- shows another buffer instead.
function M.hide(conv_buf, prompt_buf)
  local conv, prompt = M.windows(conv_buf, prompt_buf)
  for _, win in ipairs(vim.tbl_filter(function(w)
    return w ~= false
  end, { conv or false, prompt or false })) do
    if not pcall(vim.api.nvim_win_close, win, false) then
      local alt = vim.fn.bufnr("#")
      local other = alt > 0 and alt ~= conv_buf and alt ~= prompt_buf and vim.api.nvim_buf_is_valid(alt) and alt
        or vim.api.nvim_create_buf(true, false)
      vim.api.nvim_win_set_buf(win, other)
    end
  end
end

--- Puts `text` in prompt buffer `prompt_buf` after what it holds, the cursor after it where
--- the chat shows (for :PiIde ask with a range).
function M.set_prompt(conv_buf, prompt_buf, text)
  local draft = table.concat(vim.api.nvim_buf_get_lines(prompt_buf, 0, -1, false), "\n"):gsub("%s+$", "")
  if draft ~= "" then
    text = draft .. "\n\n" .. text
  end
  local lines = vim.split(text, "\n", { plain = true })
  vim.api.nvim_buf_set_lines(prompt_buf, 0, -1, false, lines)
  local _, win = M.windows(conv_buf, prompt_buf)
  if win then
    vim.api.nvim_win_set_cursor(win, { #lines, #lines[#lines] })
  end
end

--- The header over the conversation (its winbar), in every window showing it.
function M.set_header(conv_buf, text)
  for _, win in ipairs(vim.fn.win_findbuf(conv_buf)) do
    vim.api.nvim_set_option_value("winbar", text, { win = win, scope = "local" })
  end
end

return M
