-- Prebuilt libraries: when the checkout is at a release tag (lazy.nvim's `version = "*"`),
-- the library built for that tag and this platform is downloaded from the release, its SHA-256
-- checked against the release's `.sha256` file *before* anything is placed where Neovim loads
-- it, and installed by rename (a library Neovim has loaded is never written over in place).
-- Where it came from is recorded beside it. Every failure is a sentence; the caller then
-- builds from source.
local sha256 = require("pi-ide.install.sha256")
local files = require("pi-ide.core.files")

local M = {}

--- The Rust target of this machine's prebuilt library and its file extension, or nil and why.
function M.target()
  local u = vim.uv.os_uname()
  local arch = ({ x86_64 = "x86_64", amd64 = "x86_64", aarch64 = "aarch64", arm64 = "aarch64" })[u.machine]
  if not arch then
    return nil, nil, ("no prebuilt library for %s processors"):format(u.machine)
  end
  if u.sysname == "Linux" then
    -- The Linux libraries are built for glibc; musl systems (Alpine) build from source.
    if #vim.fn.glob("/lib/ld-musl-*.so.1", true, true) > 0 then
      return nil, nil, "no prebuilt library for musl-based Linux"
    end
    return arch .. "-unknown-linux-gnu", "so"
  elseif u.sysname == "Darwin" then
    return arch .. "-apple-darwin", "dylib"
  end
  return nil, nil, ("no prebuilt library for %s"):format(u.sysname)
end

--- The release asset's name for a target: libpi_ide-<target>.<ext>.
function M.asset(target, ext)
  return ("libpi_ide-%s.%s"):format(target, ext)
end

--- The release asset of the MCP clients' program (pi-ide-mcp) for a target.
function M.program_asset(target)
  return ("pi-ide-mcp-%s"):format(target)
end

local function git(root, args)
  local cmd = vim.list_extend({ "git", "-C", root }, args)
  local ok, r = pcall(function()
    return vim.system(cmd, { text = true }):wait()
  end)
  if ok and r.code == 0 then
    return vim.trim(r.stdout or "")
  end
end

--- The release tag the checkout is at (exactly), or nil.
function M.tag(root)
  local tag = git(root, { "describe", "--tags", "--exact-match", "HEAD" })
  return tag ~= "" and tag or nil
end

--- Where release assets are: `$PI_IDE_RELEASES_URL/<tag>/<asset>` (a mirror, or a test's
--- server), else the GitHub releases of the repository this checkout was cloned from.
function M.base_url(root)
  local env = vim.env.PI_IDE_RELEASES_URL
  if env and env ~= "" then
    return (env:gsub("/+$", ""))
  end
  local origin = git(root, { "remote", "get-url", "origin" }) or ""
  local repo = origin:match("github%.com[:/]([%w%-_.]+/[%w%-_.]+)$")
  if repo then
    return "https://github.com/" .. repo:gsub("%.git$", "") .. "/releases/download"
  end
end

--- Whether `url` is on this machine (a mirror or a test's server: plain http is fine there).
local function loopback(url)
  local rest = url:match("^%a[%w+.-]*://(.*)$") or ""
  local host = rest:match("^%[([^%]]+)%]") or rest:match("^([^/:]+)")
  return host == "127.0.0.1" or host == "localhost" or host == "::1"
end

--- Why a checksum fetched from `url` would prove nothing, if it would: only https (or a file,
--- or this machine) keeps a third party from swapping the library and its checksum together.
local function insecure(url)
  local scheme = (url:match("^(%a[%w+.-]*)://") or ""):lower()
  if scheme == "https" or scheme == "file" or (scheme == "http" and loopback(url)) then
    return nil
  end
  return ("its checksum would come over %s (%s), which proves nothing; set PI_IDE_RELEASES_URL to an https mirror"):format(
    scheme == "" and "an unknown protocol" or ("plain " .. scheme),
    url
  )
end

--- A download command for `url` into `file`, with curl or else wget; nil without either.
--- Redirects must stay on https (a release's files are served from another host).
local function fetch_command(url, file)
  if vim.fn.executable("curl") == 1 then
    return {
      "curl", "--fail", "--location", "--silent", "--show-error", "--max-time", "300",
      "--proto", "=https,http,file", "--proto-redir", "=https", "--output", file, url,
    }
  elseif vim.fn.executable("wget") == 1 then
    -- wget cannot be told to refuse a redirect to http: its headers are checked (see install).
    return { "wget", "--quiet", "--server-response", "--timeout=60", "--output-document=" .. file, url }
  end
end

--- A redirect to plain http in wget's headers (curl refuses them itself).
local function redirected_to_http(stderr)
  for location in (stderr or ""):gmatch("[Ll]ocation:%s*(%S+)") do
    if insecure(location) then
      return location
    end
  end
end

--- Local changes to the sources the library is built from: the release's library would not
--- match them (native.lua would refuse it as stale, and another download would not help).
local function changed_sources(root)
  local out = git(root, { "status", "--porcelain", "--", "src", "bridge", "build.rs", "Cargo.toml", "Cargo.lock" })
  return out and out ~= "" and out or nil
end

local function read(path)
  return (files.read(path))
end

-- What to download for this checkout: { target, tag, url }, or nil and why not.
local function plan(root)
  local target, ext, why = M.target()
  if not target then
    return nil, why
  end
  local tag = M.tag(root)
  if not tag then
    return nil, 'the plugin is not at a release tag (lazy.nvim: version = "*"; vim.pack: version = vim.version.range("*"))'
  end
  if changed_sources(root) then
    return nil, ("the checkout has local changes to its Rust sources, which the release's library (%s) was not built from"):format(tag)
  end
  local base = M.base_url(root)
  if not base then
    return nil, "cannot tell where its releases are (no GitHub origin; set PI_IDE_RELEASES_URL for a mirror)"
  end
  local not_safe = insecure(base)
  if not_safe then
    return nil, not_safe
  end
  local asset = M.asset(target, ext)
  return { target = target, tag = tag, base = base, asset = asset, url = ("%s/%s/%s"):format(base, tag, asset) }
end

-- Verified: into place by rename (a loaded library keeps its old, unlinked file), with a record
-- of where it came from beside it.
local function put_in_place(job, got)
  if job.mode then
    vim.uv.fs_chmod(job.tmp, job.mode)
  end
  local ok, err = os.rename(job.tmp, job.dest)
  if not ok then
    return job.finish(false, ("cannot install it at %s: %s"):format(job.dest, tostring(err)))
  end
  local record = vim.json.encode({
    tag = job.tag,
    url = job.url,
    checksum_url = job.url .. ".sha256",
    sha256 = got,
    installed = os.date("!%Y-%m-%dT%H:%M:%SZ"),
  })
  local f = io.open(job.dest .. ".source.json", "w")
  if f then
    f:write(record)
    f:close()
  end
  job.finish(true, ("installed the prebuilt %s for %s (%s), SHA-256 verified"):format(job.what, job.tag, job.target))
end

-- The library itself, checked against `expected` (its SHA-256); progress told each second.
local function fetch_library(job, expected)
  local timer = vim.uv.new_timer()
  timer:start(1000, 1000, function()
    local st = vim.uv.fs_stat(job.tmp)
    if st then
      job.say(("downloading %s… %.1f MB"):format(job.asset, st.size / 1e6))
    end
  end)
  vim.system(fetch_command(job.url, job.tmp), { text = true }, function(d)
    timer:stop()
    timer:close()
    if d.code ~= 0 then
      return job.finish(false, ("the download of %s failed (%s)"):format(job.url, vim.trim(d.stderr or "exit " .. d.code)))
    end
    local got, read_err = sha256.file(job.tmp)
    if not got then
      return job.finish(false, ("cannot read the download of %s: %s"):format(job.url, tostring(read_err)))
    elseif got ~= expected then
      local msg = "the download of %s does not match its checksum (SHA-256 %s, expected %s): it was not installed"
      return job.finish(false, msg:format(job.url, tostring(got), expected), "checksum")
    end
    put_in_place(job, got)
  end)
end

-- The checksum first (never over plain http), then the library.
local function fetch_checksum(job)
  vim.system(fetch_command(job.url .. ".sha256", job.sum_file), { text = true }, function(r)
    if r.code ~= 0 then
      return job.finish(false, ("the download of %s.sha256 failed (%s)"):format(job.url, vim.trim(r.stderr or "exit " .. r.code)))
    end
    local downgraded = redirected_to_http(r.stderr)
    if downgraded then
      return job.finish(false, ("%s.sha256 was redirected to plain http (%s): refused"):format(job.url, downgraded))
    end
    local expected = (read(job.sum_file) or ""):match("^%s*(%x+)")
    if not expected or #expected ~= 64 then
      return job.finish(false, ("%s.sha256 holds no SHA-256"):format(job.url))
    end
    fetch_library(job, expected:lower())
  end)
end

-- Downloads, verifies and installs one asset of `job` (its plan, with `asset`, `url`, `what`
-- and `mode` set) at `dest`.
local function install_asset(job, dest, done, progress)
  local dir = vim.fs.dirname(dest)
  vim.fn.mkdir(dir, "p")
  job.dest = dest
  job.tmp = ("%s/.%s.download-%d"):format(dir, vim.fs.basename(dest), vim.uv.os_getpid())
  job.sum_file = job.tmp .. ".sha256"
  -- Told from libuv callbacks: onto the main loop first.
  job.say = function(msg)
    if progress then
      vim.schedule(function()
        progress(msg)
      end)
    end
  end
  job.finish = function(ok, msg, reason)
    os.remove(job.tmp)
    os.remove(job.sum_file)
    vim.schedule(function()
      done(ok, msg, reason)
    end)
  end
  job.say(("downloading %s (%s)…"):format(job.asset, job.tag))
  fetch_checksum(job)
end

--- Downloads, verifies and installs the prebuilt library for this checkout, then the MCP
--- clients' program beside it (target/release/pi-ide-mcp: the library works without it, so
--- its failure is told, not fatal). `done(ok, msg, why)` runs on the main loop: msg says what
--- was installed, or why nothing was; `why` is "checksum" when the download did not match
--- (worth the user's eye); "in place" when it was there already. `progress(msg)` (optional) is
--- told how the download goes.
function M.install(root, dest, done, progress)
  local job, why = plan(root)
  if not job then
    return done(false, why)
  end
  -- Asked twice for one change (vim.pack 0.12-dev sends "update", then "install"): the
  -- verified library of this tag is in place already, and pi-ide-mcp beside it.
  local here = M.source(dest)
  if here and here.tag == job.tag and vim.uv.fs_stat(vim.fs.joinpath(vim.fs.dirname(dest), "pi-ide-mcp")) then
    return done(true, ("the prebuilt library for %s is in place already (SHA-256 verified)"):format(job.tag), "in place")
  end
  if not fetch_command(job.url, dest) then
    return done(false, "neither curl nor wget was found to download it")
  end
  job.what = "library"
  install_asset(job, dest, function(ok, msg, reason)
    if not ok then
      return done(ok, msg, reason)
    end
    local program = vim.tbl_extend("force", {}, job, { what = "pi-ide-mcp", mode = 493 })
    program.asset = M.program_asset(job.target)
    program.url = ("%s/%s/%s"):format(job.base, job.tag, program.asset)
    install_asset(program, vim.fs.joinpath(vim.fs.dirname(dest), "pi-ide-mcp"), function(ok2, msg2)
      done(true, ok2 and (msg .. "; and pi-ide-mcp") or ("%s; pi-ide-mcp was not (%s): MCP clients need `cargo build --release`"):format(msg, msg2))
    end, progress)
  end, progress)
end

--- Where the library at `path` came from, when it is still the one a download installed:
--- { tag, url, checksum_url, sha256, installed }, or nil (built from source, or rebuilt since).
function M.source(path)
  local record = read(path .. ".source.json")
  local ok, info = pcall(vim.json.decode, record or "")
  if not ok or type(info) ~= "table" or info.sha256 ~= sha256.file(path) then
    return nil
  end
  return info
end

return M
