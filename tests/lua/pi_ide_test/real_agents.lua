-- What tests/real_agents/ asks of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

--- Overrides vim.ui.select and vim.ui.input: each answers (on the next tick, as a picker would)
--- `answers[kind]` (nil: cancelled), Yes/No questions with `answers.confirm`; what was asked is
--- kept in _G.asked.
function M.answer_dialogs(answers)
  _G.asked = {}
  vim.ui.select = function(items, opts, cb)
    table.insert(_G.asked, opts.prompt)
    local pick = items[1] == "Yes" and answers.confirm or answers.select
    vim.schedule(function()
      cb(pick)
    end)
  end
  vim.ui.input = function(opts, cb)
    table.insert(_G.asked, opts.prompt)
    vim.schedule(function()
      cb(answers.input)
    end)
  end
end

--- Overrides vim.ui.select to pick the model whose id is `id`; the items as the picker shows
--- them are kept in _G.listed.
function M.pick_model(id)
  _G.listed = nil
  vim.ui.select = function(items, opts, cb)
    _G.listed = vim.tbl_map(opts.format_item, items)
    for _, m in ipairs(items) do
      if m.id == id then
        return cb(m)
      end
    end
    cb(nil)
  end
end

--- The windows of the current tab: { buffer name, 'diff', the buffer's lines, 'modifiable' }.
function M.tab_windows()
  local out = {}
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local b = vim.api.nvim_win_get_buf(w)
    local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
    table.insert(out, { vim.api.nvim_buf_get_name(b), vim.wo[w].diff, lines, vim.bo[b].modifiable })
  end
  return out
end

return M
