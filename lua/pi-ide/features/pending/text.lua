-- A pending change's two texts as lines that keep their line ends, so that a hunk taken from one
-- side into the other gives back the very bytes (a missing final newline, CRLF, stay as they were).
local M = {}

--- `s` as lines, each with its "\n" (the last one without, when `s` does not end in one).
function M.lines(s)
  local out, at = {}, 1
  while at <= #s do
    local nl = s:find("\n", at, true)
    table.insert(out, s:sub(at, nl or #s))
    at = (nl or #s) + 1
  end
  return out
end

--- The hunks of `a` → `b`: { a_start, a_count, b_start, b_count } as vim.diff gives them (a
--- count of 0 starts at the line before).
function M.hunks(a, b)
  return vim.diff(a or "", b or "", { result_type = "indices" })
end

--- `into` with hunk `h`'s lines replaced by `from`'s (`side`: "a" puts b's lines in a, "b" a's in b).
function M.apply(a, b, h, side)
  local la, lb = M.lines(a or ""), M.lines(b or "")
  local src, dst = lb, la
  local s_start, s_count, d_start, d_count = h[3], h[4], h[1], h[2]
  if side == "b" then
    src, dst = la, lb
    s_start, s_count, d_start, d_count = h[1], h[2], h[3], h[4]
  end
  local first = d_count > 0 and d_start or d_start + 1
  local taken = {}
  for i = s_start, s_start + s_count - 1 do
    table.insert(taken, src[i])
  end
  local out = {}
  for i = 1, first - 1 do
    table.insert(out, dst[i])
  end
  vim.list_extend(out, taken)
  for i = first + d_count, #dst do
    table.insert(out, dst[i])
  end
  -- A line that lost its "\n" by moving off the end gets one back.
  for i = 1, #out - 1 do
    if out[i]:sub(-1) ~= "\n" then
      out[i] = out[i] .. "\n"
    end
  end
  return table.concat(out)
end

--- `s` as the buffer's lines (no line ends; a final newline makes no empty last line).
function M.buffer_lines(s)
  local lines = vim.split(s or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return vim.tbl_map(function(l)
    return (l:gsub("\r$", ""))
  end, lines)
end

return M
