-- What a suggestion repeats of the text already after the cursor is not inserted twice.
--
-- Auto-pair plugins (mini.pairs, nvim-autopairs) type the closer with the opener: `{|}`,
-- `print(|)`, `"|"`; after <CR> between a pair, the closer sits on the next line. A model that
-- completes the code often writes that closer again. Accepting inserts the suggestion at the
-- cursor, so whatever follows the cursor ends up after the *end* of the suggestion (its last
-- line, for a multi-line one): that is where a repeat is cut. A closing bracket is cut only when
-- the suggestion closes more of its kind than it opens (so `foo(|)` + `bar()` keeps its `)`).
local M = {}

local OPENER = { [")"] = "(", ["]"] = "[", ["}"] = "{" }
local QUOTE = { ['"'] = true, ["'"] = true, ["`"] = true }

local function count(text, ch)
  local n = 0
  for i = 1, #text do
    if text:byte(i) == ch:byte() then
      n = n + 1
    end
  end
  return n
end

-- Whether every character of `tail` (closers and quotes only) closes something that `item`
-- did not open itself, so that the copy after the cursor does the same job.
local function closes_outside(item, tail)
  for i = 1, #tail do
    local ch = tail:sub(i, i)
    if OPENER[ch] then
      local net = count(item, OPENER[ch]) - count(item, ch)
      if -net < count(tail, ch) then
        return false
      end
    elseif QUOTE[ch] then
      -- An odd number of quotes: the item closes a string opened before it.
      if count(item, ch) % 2 == 0 then
        return false
      end
    else
      return false
    end
  end
  return true
end

local function ends_with(s, tail)
  return tail ~= "" and #s >= #tail and s:sub(-#tail) == tail
end

-- The text after the cursor on its line: cut the longest start of it that the suggestion ends
-- with, when that piece only closes what was opened before the cursor, or when the suggestion
-- ends with all of it (e.g. `);`).
local function cut_same_line(item, suffix)
  local s = vim.trim(suffix)
  if s == "" then
    return item
  end
  if ends_with(item, s) and not s:find("^[%)%]}\"'`]+$") then
    return item:sub(1, #item - #s)
  end
  for k = #s, 1, -1 do
    local piece = s:sub(1, k)
    if piece:find("^[%)%]}\"'`]+$") and ends_with(item, piece) and closes_outside(item, piece) then
      local cut = item:sub(1, #item - k)
      -- `{ | }`: the space before the closer is already there too.
      if suffix:find("^[ \t]") then
        cut = cut:gsub("[ \t]+$", "")
      end
      return cut
    end
  end
  return item
end

-- The cursor on a blank line between a pair (`{`, blank line, `}`): a multi-line suggestion
-- whose last line is that closing line loses it.
local function cut_next_line(item, suffix, next_line)
  if vim.trim(suffix) ~= "" or not next_line then
    return item
  end
  local closer = vim.trim(next_line)
  if closer == "" or not closer:find("^[%)%]}\"'`;,]+$") then
    return item
  end
  local body = item:gsub("%s+$", "")
  local last_nl = body:find("\n[^\n]*$")
  if not last_nl or vim.trim(body:sub(last_nl + 1)) ~= closer then
    return item
  end
  local brackets = closer:gsub("[^%)%]}]", "")
  if not closes_outside(body, brackets) then
    return item
  end
  return body:sub(1, last_nl - 1)
end

--- The suggestion as it should be inserted at a cursor followed by `suffix` on its line and
--- `next_line` on the line below (nil at the end of the buffer).
function M.trim(item, suffix, next_line)
  local out = cut_same_line(item, suffix or "")
  if out == item then
    out = cut_next_line(item, suffix or "", next_line)
  end
  return out
end

return M
