-- cli_spec.lua -- the tirlua program: options, arg, stdin, exit status, REPL via -i.
-- Runs <TIRLUA_BUILD_DIR or build>/tirlua through the shell.

local build = os.getenv("TIRLUA_BUILD_DIR") or "build"
local tirlua = build .. "/tirlua"

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function tmpfile(text)
  local name = os.tmpname()
  local f = assert(io.open(name, "w"))
  f:write(text)
  f:close()
  return name
end

-- Runs tirlua with a shell-quoted argument list; stdin from `input` (else empty).
-- Returns stdout and stderr together, and the exit status.
local function run(args, input)
  local quoted = {}
  for i, a in ipairs(args) do quoted[i] = quote(a) end
  local stdin = tmpfile(input or "")
  local p = assert(io.popen(("%s %s < %s 2>&1; echo \"rc=$?\""):format(
    quote(tirlua), table.concat(quoted, " "), quote(stdin))))
  local out = p:read("a")
  p:close()
  os.remove(stdin)
  local body, rc = out:match("^(.-)rc=(%d+)\n$")
  return body, tonumber(rc)
end

describe("tirlua command line #cli", function()
  it("-v prints the version", function()
    local out, rc = run({ "-v" })
    assert.are.equal(0, rc)
    assert.matches("^tirlua %d+%.%d+%.%d+ %(Lua 5%.4%)\n$", out)
  end)

  it("-e runs a statement", function()
    local out, rc = run({ "-e", "print(1+1)" })
    assert.are.equal(0, rc)
    assert.are.equal("2\n", out)
  end)

  it("has tir loaded as a global", function()
    assert.are.equal("table\n", (run({ "-e", "print(type(tir))" })))
  end)

  it("passes script arguments in arg and ...", function()
    local script = tmpfile("print(arg[0] == ..., arg[1], arg[2], select('#', ...), ...)\n")
    local out, rc = run({ script, "a", "b c" })
    os.remove(script)
    assert.are.equal(0, rc)
    assert.are.equal("false\ta\tb c\t2\ta\tb c\n", out)
    script = tmpfile("print(arg[0], arg[-1], arg[-2])\n")
    out = run({ "-e", "x=1", script })
    os.remove(script)
    assert.are.equal(script .. "\tx=1\t-e\n", out)
  end)

  it("skips a #! first line", function()
    local script = tmpfile("#!/usr/bin/env tirlua\nprint('shebang ok')\n")
    local out, rc = run({ script })
    os.remove(script)
    assert.are.equal(0, rc)
    assert.are.equal("shebang ok\n", out)
  end)

  it("- runs stdin with the remaining arguments", function()
    local out, rc = run({ "-", "x", "y" }, "print('stdin', ...)\n")
    assert.are.equal(0, rc)
    assert.are.equal("stdin\tx\ty\n", out)
  end)

  it("runs stdin as a chunk when it is not a terminal and there is no script", function()
    local out, rc = run({}, "print('piped')\n")
    assert.are.equal(0, rc)
    assert.are.equal("piped\n", out)
    out, rc = run({}, "error('piped failure')\n")
    assert.are.equal(1, rc)
    assert.matches("^tirlua: stdin:1: piped failure", out)
  end)

  it("exits 1 with a tirlua: message on a syntax error", function()
    local script = tmpfile("local x = = 1\n")
    local out, rc = run({ script })
    os.remove(script)
    assert.are.equal(1, rc)
    assert.matches("^tirlua: .*unexpected symbol", out)
    out, rc = run({ "-e", "x =" })
    assert.are.equal(1, rc)
    assert.matches("^tirlua: %(command line%):1:", out)
  end)

  it("exits 1 with a tirlua: message and a traceback on a runtime error", function()
    local out, rc = run({ "-e", "error('boom')" })
    assert.are.equal(1, rc)
    assert.matches("^tirlua: %(command line%):1: boom\nstack traceback:", out)
  end)

  it("prints error objects through __tostring", function()
    local obj = "setmetatable({}, {__tostring = function() return 'OBJ' end})"
    local out, rc = run({ "-e", "error(" .. obj .. ")" })
    assert.are.equal(1, rc)
    assert.are.equal("tirlua: OBJ\n", out)
  end)

  it("--dump, --device and --debug set tir.config", function()
    local out, rc = run({ "--dump=ir", "-e", "print(tir.config.dump)" })
    assert.are.equal(0, rc)
    assert.are.equal("ir\n", out)
    out = run({ "--device=1", "--debug=2", "-e", "print(tir.config.device, tir.config.debug)" })
    assert.are.equal("1\t2\n", out)
    -- --device=N is the device a script gets without naming one (it was set and read by nothing)
    out = run({ "--device=3", "-e", "print(tir.device('cuda').id, tir.nd.cuda().id, tir.device('cuda', 0).id, tir.device().id)" })
    assert.are.equal("3\t3\t0\t0\n", out)
  end)

  -- a one-kernel build (compile = false: no NVRTC needed)
  local build_script = table.concat({
    "local te = tir.te",
    "local A = te.placeholder({64}, 'float32', 'A')",
    "local B = te.compute({64}, function(i) return A[{i}] + 1 end, 'B')",
    "local s = tir.Schedule(te.create_prim_func({A, B}))",
    "local o, t = s:split(s:get_loops('B'), {nil, 32}); s:bind(o, 'blockIdx.x'); s:bind(t, 'threadIdx.x')",
    "tir.build(s, 'cuda', {compile = false, cache = false})",
    "print('built')"}, "\n")

  it("--debug=1 reports each build and a failing script's traceback; 2 adds the IR after each pass", function()
    local out, rc = run({ "--debug=1", "-e", build_script })
    assert.are.equal(0, rc)
    assert.matches("%[tirlua debug%] build main %-> sm_%d+: main_kernel grid%(2, 1, 1%) block%(32, 1, 1%) smem 0; cache %a+", out)
    assert.not_matches("after lower", out)
    out = run({ "--debug=2", "-e", build_script })
    assert.matches("%-%- after input\n", out)
    assert.matches("%[tirlua debug%] build main", out)
    out = run({ "-e", build_script })
    assert.are.equal("built\n", out)
    -- the traceback of a tir.Error only with --debug
    out, rc = run({ "--debug=1", "-e", "tir.ops.conv(1, 2)" })
    assert.are.equal(1, rc)
    assert.matches("TypeError in conv: data must be a te tensor.*stack traceback:.*conv%.lua", out)
    out = run({ "-e", "tir.ops.conv(1, 2)" })
    assert.not_matches("traceback", out)
  end)

  it("--dump=ptx works for tir.build_many (the PTX exists only after its compile)", function()
    local script = build_script:gsub("tir%.build%(s, 'cuda', {compile = false, cache = false}%)",
      "local r = tir.build_many({s, s}, 'cuda', {cache = false}); for _, x in ipairs(r) do assert(x.mod, tostring(x.err)) end")
    local out, rc = run({ "--dump=ptx", "-e", script })
    if not tir.nvrtc_available() then return end -- compile = true needs NVRTC
    assert.are.equal(0, rc, out)
    local _, n = out:gsub("%.entry main_kernel", "")
    assert.are.equal(2, n)
    out = run({ "--dump=ptx", "-e", build_script })
    assert.matches("%-%- no PTX: built with compile = false", out)
  end)

  it("rejects unknown options and bad values with the usage", function()
    for _, bad in ipairs({ "-x", "--nope", "--dump=sass", "--device=one", "-e" }) do
      local out, rc = run({ bad })
      assert.are.equal(1, rc)
      assert.matches("^tirlua: .*usage: tirlua", out)
    end
    local out, rc = run({ "--help" })
    assert.are.equal(0, rc)
    assert.matches("^usage: tirlua", out)
  end)

  it("-l requires a module into a global", function()
    assert.are.equal("aa\n", (run({ "-l", "s=string", "-e", "print(s.rep('a', 2))" })))
  end)

  it("runs TIRLUA_INIT first unless -E", function()
    local cmd = "TIRLUA_INIT='print(\"init\")' " .. quote(tirlua) .. " %s -e 'print(\"main\")'"
    local p = assert(io.popen(cmd:format("") .. "; " .. cmd:format("-E")))
    local out = p:read("a")
    p:close()
    assert.are.equal("init\nmain\nmain\n", out)
  end)
end)

describe("tirlua REPL through -i #cli", function()
  it("prints the value of an expression", function()
    local out, rc = run({ "-i" }, "1+1\n")
    assert.are.equal(0, rc)
    assert.are.equal("2\n", out)
  end)

  it("reads a multi-line statement", function()
    assert.are.equal("1\n2\n3\n", (run({ "-i" }, "for i = 1, 3 do\n  print(i)\nend\n")))
  end)

  it("reports an error and goes on", function()
    local out = run({ "-i" }, "error('oops')\nprint('after')\n")
    assert.matches("stdin:1: oops", out)
    assert.matches("after\n$", out)
  end)

  it("treats a leading = as return", function()
    assert.are.equal("5\n", (run({ "-i" }, "= 2+3\n")))
  end)

  it("has tir loaded", function()
    assert.are.equal("table\n", (run({ "-i" }, "print(type(tir))\n")))
  end)

  it("prints values and errors through __tostring", function()
    local mt = "setmetatable({}, {__tostring = function() return 'OBJ' end})"
    local out = run({ "-i" }, mt .. "\nerror(" .. mt .. ")\n")
    assert.are.equal("OBJ\nOBJ\n", out)
  end)

  it("runs after a script with -i", function()
    local script = tmpfile("x = 40\n")
    local out = run({ "-i", script }, "x + 2\n")
    os.remove(script)
    assert.are.equal("42\n", out)
  end)
end)
