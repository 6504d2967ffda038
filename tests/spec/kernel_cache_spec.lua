-- kernel_cache_spec.lua -- the on-disk kernel cache (include/tir/kernel_cache.h): a second
-- build of the same kernel loads PTX + CUBIN from disk; damaged entries are reported once and
-- rebuilt, never loaded; concurrent builders leave one whole entry; the CLI's commands.
-- Needs NVRTC (the CUDA toolkit), as every compile spec does.
local tir = require("tir")
local te = tir.te

local build = os.getenv("TIRLUA_BUILD_DIR") or "build"
local tirlua = build .. "/tirlua"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("a")
  p:close()
  local body, rc = out:match("^(.-)rc=(%d+)\n$")
  return body, tonumber(rc)
end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. d))
  return d
end

local function files(dir, pattern)
  local out = {}
  local p = io.popen("ls -1 " .. dir .. " 2>/dev/null")
  for name in p:lines() do if name:match(pattern) then out[#out + 1] = dir .. "/" .. name end end
  p:close()
  return out
end

local function vadd(n)
  local A = te.placeholder({n}, "float32", "A")
  local B = te.compute({n}, function(i) return A[{i}] * 2.0 + 1.0 end, "B")
  local sch = tir.Schedule(te.create_prim_func({A, B}))
  local bi, ti = sch:split(sch:get_loops(sch:get_block("B")), {nil, 64})
  sch:bind(bi, "blockIdx.x")
  sch:bind(ti, "threadIdx.x")
  return sch.mod
end

-- A script that builds vadd(n) and prints the cache status (for the subprocess tests).
local SCRIPT = [[
local tir = require("tir")
local te = tir.te
local n = tonumber(arg[1])
local A = te.placeholder({n}, "float32", "A")
local B = te.compute({n}, function(i) return A[{i}] * 2.0 + 1.0 end, "B")
local sch = tir.Schedule(te.create_prim_func({A, B}))
local bi, ti = sch:split(sch:get_loops(sch:get_block("B")), {nil, 64})
sch:bind(bi, "blockIdx.x")
sch:bind(ti, "threadIdx.x")
local mod = tir.build(sch.mod, "cuda -arch=sm_80")
print("status=" .. mod:cache_status() .. " ptxlen=" .. #mod:get_source("ptx"))
]]

describe("kernel cache", function()
  local dir, script
  before_each(function()
    dir = tmpdir()
    tir.cache.set(dir, true)
    script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(SCRIPT)
    f:close()
  end)
  after_each(function()
    tir.cache.set(nil, true)
    os.execute("rm -rf " .. dir)
    os.remove(script)
  end)

  local function run(n, env)
    return sh(("TIRLUA_CACHE_DIR=%s %s %s %s %d"):format(dir, env or "", tirlua, script, n))
  end

  it("misses, stores, then hits with the same PTX; other kernels and arches are other entries", function()
    local m1 = tir.build(vadd(1000), "cuda -arch=sm_80")
    assert.are.equal("miss", m1:cache_status())
    assert.are.equal(1, #files(dir, "%.tkc$"))
    local m2 = tir.build(vadd(1000), "cuda -arch=sm_80")
    assert.are.equal("hit", m2:cache_status())
    assert.are.equal(m1:get_source("ptx"), m2:get_source("ptx"))
    assert.are.equal("miss", tir.build(vadd(1000), "cuda -arch=sm_90"):cache_status())
    assert.are.equal("miss", tir.build(vadd(1001), "cuda -arch=sm_80"):cache_status())
    local info = tir.cache.info()
    assert.are.equal(dir, info.dir)
    assert.is_true(info.enabled)
    assert.are.equal(3, info.entries)
    assert.is_true(info.bytes > 0)
    assert.are.equal("none", tir.build(vadd(1000), "cuda -arch=sm_80", {compile = false}):cache_status())
    assert.are.equal(3, tir.cache.clear())
    assert.are.equal(0, tir.cache.info().entries)
  end)

  it("is off with {cache = false}, tir.cache.set(dir, false) and TIRLUA_CACHE=0", function()
    assert.are.equal("off", tir.build(vadd(64), "cuda -arch=sm_80", {cache = false}):cache_status())
    tir.cache.set(dir, false)
    assert.are.equal("off", tir.build(vadd(64), "cuda -arch=sm_80"):cache_status())
    assert.are.equal(0, #files(dir, "%.tkc$"))
    local out, rc = run(64, "TIRLUA_CACHE=0")
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("status=off", 1, true), out)
    assert.are.equal(0, #files(dir, "%.tkc$"))
  end)

  it("says once, with the reason, when its directory cannot be written (status off, the build goes on)", function()
    -- two builds in one process (another arch: another entry), one message
    local f = assert(io.open(script, "a"))
    f:write("print('second=' .. tir.build(sch.mod, 'cuda -arch=sm_90'):cache_status())\n")
    f:close()
    local out = sh(("TIRLUA_CACHE_DIR=/proc/tirlua-no-such-dir %s %s 640"):format(tirlua, script))
    assert.truthy(out:find("status=off", 1, true), out)
    assert.truthy(out:find("second=off", 1, true), out)
    local _, n = out:gsub("kernel cache: /proc/tirlua%-no%-such%-dir: cannot create the directory %(", "")
    assert.are.equal(1, n, out)
  end)

  it("hits across processes", function()
    local out1 = run(512)
    local out2 = run(512)
    assert.truthy(out1:find("status=miss", 1, true), out1)
    assert.truthy(out2:find("status=hit", 1, true), out2)
    assert.are.equal(out1:match("ptxlen=(%d+)"), out2:match("ptxlen=(%d+)"))
  end)

  for _, case in ipairs({
    {"truncated", "truncate -s 100 %s", "its size does not match its header"},
    {"cut to less than a header", "truncate -s 10 %s", "shorter than its header"},
    {"corrupted", "printf 'XXXX' | dd of=%s bs=1 seek=300 conv=notrunc status=none", "checksum mismatch"},
    {"not an entry", "printf 'hello world, not a cache entry at all......................' > %s", "not a tirlua cache entry"},
  }) do
    it("detects a " .. case[1] .. " entry, reports it once, never loads it, rebuilds it", function()
      run(256)
      local entry = files(dir, "%.tkc$")[1]
      assert.truthy(entry)
      assert(os.execute(case[2]:format(entry)))
      local out, rc = run(256)
      assert.are.equal(0, rc, out)
      assert.truthy(out:find("status=miss", 1, true), out)
      local _, reports = out:gsub("kernel cache: entry [^\n]* is damaged %(" .. case[3]:gsub("%p", "%%%0"), "")
      assert.are.equal(1, reports, out)
      -- rebuilt: the next process hits and reports nothing
      local out3 = run(256)
      assert.truthy(out3:find("status=hit", 1, true), out3)
      assert.falsy(out3:find("damaged", 1, true), out3)
    end)
  end

  it("keeps one whole entry when several processes build the same kernel at once", function()
    local cmds = {}
    for i = 1, 4 do
      cmds[i] = ("(TIRLUA_CACHE_DIR=%s %s %s 2048 > %s.out%d 2>&1; echo $? >> %s.out%d) &"):format(dir, tirlua, script, dir, i, dir, i)
    end
    assert(os.execute(table.concat(cmds, " ") .. " wait"))
    for i = 1, 4 do
      local f = assert(io.open(("%s.out%d"):format(dir, i)))
      local text = f:read("a")
      f:close()
      os.remove(("%s.out%d"):format(dir, i))
      assert.truthy(text:find("status=", 1, true), text)
      assert.truthy(text:match("\n0\n$"), text)
      assert.falsy(text:find("damaged", 1, true), text)
    end
    assert.are.equal(1, #files(dir, "%.tkc$"))
    assert.are.equal(0, #files(dir, "^tmp%."))
    local out = run(2048)
    assert.truthy(out:find("status=hit", 1, true), out)
  end)

  it("evicts the least recently used entries past TIRLUA_CACHE_MAX_MB, and stale temporary files", function()
    -- three 600 KiB entries used an hour, two hours and three hours ago, a crashed writer's
    -- temporary file, and a fresh one; a store with a 1 MiB limit keeps the newest old entry
    for i, age in ipairs({3, 2, 1}) do
      assert(os.execute(("head -c 614400 /dev/zero > %s/old%d.tkc && touch -d '%d hours ago' %s/old%d.tkc"):format(dir, i, age, dir, i)))
    end
    assert(os.execute(("echo x > %s/tmp.stale && touch -d '2 hours ago' %s/tmp.stale && echo y > %s/tmp.live"):format(dir, dir, dir)))
    local out, rc = run(96, "TIRLUA_CACHE_MAX_MB=1")
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("status=miss", 1, true), out)
    local left = {}
    for _, f in ipairs(files(dir, ".")) do left[#left + 1] = f:match("[^/]+$") end
    table.sort(left) -- the new entry (hex digits) sorts first
    assert.are.equal(3, #left, table.concat(left, " "))
    assert.truthy(left[1]:match("^%x+%.tkc$"), left[1])
    assert.are.same({"old3.tkc", "tmp.live"}, {left[2], left[3]})
    -- a hit refreshes an entry's last use (mtime), so eviction keeps what is used
    local entry = dir .. "/" .. left[1]
    assert(os.execute(("touch -d '5 hours ago' %s"):format(entry)))
    out = run(96, "TIRLUA_CACHE_MAX_MB=1")
    assert.truthy(out:find("status=hit", 1, true), out)
    local p = io.popen("stat -c %Y " .. entry)
    local mtime = tonumber(p:read("l"))
    p:close()
    assert.truthy(os.time() - mtime < 600, "mtime not refreshed: " .. tostring(mtime))
    -- a bad limit is reported and the default used
    out, rc = run(97, "TIRLUA_CACHE_MAX_MB=lots")
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("TIRLUA_CACHE_MAX_MB=lots is not a number of MiB", 1, true), out)
    assert.are.equal(1024 * 1024 * 1024, tir.cache.info().limit)
  end)

  it("tirlua --cache-info and --cache-clear", function()
    run(128)
    local out, rc = sh(("TIRLUA_CACHE_DIR=%s %s --cache-info"):format(dir, tirlua))
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("kernel cache: " .. dir, 1, true), out)
    assert.truthy(out:find("1 entries", 1, true), out)
    out, rc = sh(("TIRLUA_CACHE_DIR=%s %s --cache-clear"):format(dir, tirlua))
    assert.are.equal(0, rc, out)
    assert.truthy(out:find("removed 1 files", 1, true), out)
    out = sh(("TIRLUA_CACHE_DIR=%s TIRLUA_CACHE=off %s --cache-info"):format(dir, tirlua))
    assert.truthy(out:find("disabled", 1, true), out)
    assert.truthy(out:find("0 entries", 1, true), out)
  end)

  it("refuses bad arguments to tir.cache.set", function()
    assert.has_error(function() tir.cache.set(42) end)
    assert.has_error(function() tir.cache.set(dir, "yes") end)
  end)
end)
