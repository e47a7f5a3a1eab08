-- What the user has left in a review goes to the core after each change they make (a hunk
-- decided, an edit in Normal mode), so that an agent closing the review because the user
-- answered in its terminal (a closeDiff) gets that text at once, from the core, even
-- while Neovim is busy. Typing in Insert mode only says "changing" (once): TextChanged follows
-- when the user leaves it, and until then the core asks Lua.
local load = require("pi-ide.features.review.load")

local M = {}

local function core()
  return require("pi-ide.core.native").get()
end

--- Tells the core the text of review `r`'s proposal pane now.
function M.push(r)
  local c = core()
  if not (c and r.ui and not r.ended and vim.api.nvim_buf_is_valid(r.ui.right_buf)) then
    return
  end
  local buf = r.ui.right_buf
  if vim.api.nvim_buf_get_changedtick(buf) == r.proposal_tick then
    return -- as its agent sent it: the core answers null, the agent's own proposal
  end
  local text = load.text(buf)
  r.left_changing = false
  -- Not UTF-8: the core cannot hold it; Lua is asked (and answers null, the proposal).
  c.review_left(r.req, not load.invalid_utf8(text) and text or nil)
end

--- The user is typing in review `r`: the core asks Lua until the next push.
function M.changing(r)
  local c = core()
  if c and not r.left_changing then
    r.left_changing = true
    c.review_left(r.req, nil)
  end
end

--- Pushes review `r`'s text after each change in Normal mode; marks it changing in Insert mode.
function M.attach(r, group)
  local buf = r.ui.right_buf
  local guard = require("pi-ide.core.log").guard
  vim.api.nvim_create_autocmd("TextChanged", { group = group, buffer = buf, callback = guard("pushing a review's text", function()
    M.push(r)
  end) })
  vim.api.nvim_create_autocmd({ "TextChangedI", "TextChangedP" }, { group = group, buffer = buf, callback = guard("pushing a review's text", function()
    M.changing(r)
  end) })
  -- Changed while another window is current (`dp` from the left pane, a plugin): no TextChanged
  -- comes for it; pushed on the next turn of the loop.
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      if r.ended or r.ui == nil then
        return true
      end
      if vim.api.nvim_get_current_buf() ~= buf and not r.left_soon then
        r.left_soon = true
        vim.schedule(function()
          r.left_soon = false
          M.push(r)
        end)
      end
    end,
  })
  -- Decisions carried from a review it took the place of (carry.lua) came before this.
  M.push(r)
end

return M
