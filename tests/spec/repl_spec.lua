-- repl_spec.lua -- the REPL's TAB completion (readline's hook, driven through a pseudo-terminal
-- by tests/repl/pty_complete.py) and help(x); tir.repl.complete itself.
local tir = require("tir")
local repl = require("tir.repl")
local build = os.getenv("TIRLUA_BUILD_DIR") or "build"

describe("tir.repl.complete", function()
  it("completes globals, fields, module functions, methods and node fields", function()
    assert.are.same({"tir.Schedule", "tir.ScheduleState"}, repl.complete("tir.Sch"))
    assert.are.same({"tir.te.placeholder"}, repl.complete("tir.te.pla"))
    local found = false
    for _, c in ipairs(repl.complete("tir")) do found = found or c == "tir" end
    assert.is_true(found)
    local te = tir.te
    local A = te.placeholder({4}, "float32", "A")
    local B = te.compute({4}, function(i) return A[{i}] end, "B")
    _G.__repl_sch = tir.Schedule(te.create_prim_func({A, B}))
    local sc = repl.complete("__repl_sch:s")
    assert.truthy(#sc >= 3)
    for _, c in ipairs(sc) do assert.truthy(c:match("^__repl_sch:s"), c) end
    local has = {}
    for _, c in ipairs(sc) do has[c] = true end
    assert.is_true(has["__repl_sch:split"] and has["__repl_sch:storage_align"] and has["__repl_sch:set_scope"])
    assert.are.same({"__repl_sch.mod.body"}, repl.complete("__repl_sch.mod.bo"))
    _G.__repl_arr = tir.nd.empty({2}, "float32")
    assert.are.same({"__repl_arr:to", "__repl_arr:to_dlpack", "__repl_arr:to_table"}, repl.complete("__repl_arr:to"))
    assert.are.same({}, repl.complete("nosuchname.x"))
    assert.are.same({}, repl.complete("tir.te.placeholder.x")) -- a function has no fields
    _G.__repl_sch, _G.__repl_arr = nil, nil
  end)

  it("help shows docstrings, module headers, object methods and node fields", function()
    assert.truthy(repl.doc(tir.Schedule.split):find("Splits a loop", 1, true))
    assert.truthy(repl.doc(tir.build):find("tir.build(f, target", 1, true))
    assert.truthy(repl.doc(tir.te):find("tensor expressions", 1, true))
    local A = tir.te.placeholder({4}, "float32", "A")
    local sch = tir.Schedule(tir.te.create_prim_func({A, tir.te.compute({4}, function(i) return A[{i}] end, "B")}))
    assert.truthy(repl.doc(sch):find("methods: .*split"))
    assert.truthy(repl.doc(sch.mod):find("IR node of kind PrimFunc", 1, true))
    assert.truthy(repl.doc(tir.nd.empty({1}, "float32")):find("methods: .*to_table"))
  end)

  it("sees through the lazily loaded modules tir.tune and tir.layout (help and completion)", function()
    assert.truthy(repl.doc(tir.layout):find("pictures of where data lives", 1, true), repl.doc(tir.layout))
    assert.truthy(repl.doc(tir.tune):find("search a space of schedule parameters", 1, true))
    assert.are.same({"tir.layout.shared"}, repl.complete("tir.layout.sh"))
    assert.are.same({"tir.tune.best"}, repl.complete("tir.tune.be"))
    assert.are.equal("an object", repl.doc(setmetatable({}, {})))
    assert.truthy(repl.doc(tir.ops):find("ready-made operators", 1, true), repl.doc(tir.ops))
    -- help("tir.build") documents tir.build (it said "a string: tir.build"); a misspelled name says so
    local printed = {}
    local print0 = _G.print
    _G.print = function(s) printed[#printed + 1] = s end
    repl.help("tir.build")
    repl.help("tir.biuld")
    _G.print = print0
    assert.truthy(printed[1]:find("tir.build(f, target", 1, true), printed[1])
    assert.are.equal("help: 'tir.biuld' names nothing (a misspelled name?)", printed[2])
    assert.truthy(tir.ops.quantized_matmul) -- loaded: still documented as the module
    assert.truthy(repl.doc(tir.ops):find("ready-made operators", 1, true), repl.doc(tir.ops))
  end)
end)

describe("the REPL on a terminal", function()
  local function drive(...)
    local args = {}
    for i, l in ipairs({...}) do args[i] = "'" .. l:gsub("'", "'\\''") .. "'" end
    local home = os.tmpname()
    os.remove(home)
    os.execute("mkdir -p " .. home)
    local p = assert(io.popen(("HOME=%s python3 tests/repl/pty_complete.py %s/tirlua %s 2>&1"):format(home, build,
      table.concat(args, " "))))
    local out = p:read("a")
    p:close()
    os.execute("rm -rf " .. home)
    return out
  end

  it("completes a module path with TAB (readline's completion hook)", function()
    local out = drive("print(tir.te.pla\\t == tir.te.placeholder)")
    assert.truthy(out:find("print(tir.te.placeholder == tir.te.placeholder)", 1, true), out)
    assert.truthy(out:find("\ntrue", 1, true), out)
  end)

  it("completes a method after a colon", function()
    local out = drive("a = tir.nd.empty({3}, 'float32')", "print(#a:to_ta\\t())")
    assert.truthy(out:find("a:to_table()", 1, true), out)
    assert.truthy(out:find("\n3", 1, true), out)
  end)

  it("has help(x)", function()
    local out = drive("help(tir.Schedule.split)")
    assert.truthy(out:find("Splits a loop", 1, true), out)
  end)

  it("offers no file names when no Lua name matches (README.md for READ<TAB>)", function()
    local out = drive("print(READ\\t)")
    assert.falsy(out:find("README.md", 1, true), out)
    assert.truthy(out:find("\nnil", 1, true), out) -- print(READ) ran: READ is an unset global
  end)
end)
