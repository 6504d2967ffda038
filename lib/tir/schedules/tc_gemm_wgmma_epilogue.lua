--- tir.schedules.tc_gemm_wgmma_epilogue: tc_gemm_wgmma's fused epilogues (tc_gemm option
-- epilogue = the block's name), public schedule primitives only:
--   * plain: an epilogue that converts the float32 accumulator to float16 and reads nothing
--     else is fused into the accumulator store (wgmma_store_..._f32_f16_global);
--   * staged: any other elementwise epilogue (and the plain one with epilogue_store = "staged") (a quantized GEMM's 4-term correction, bias,
--     scale, rounding, zero point and clamp: tir.ops.quantized_matmul's block "out") is inlined
--     into the write-back (reverse_compute_inline), the accumulators are stored into a shared
--     tile per warpgroup (cache_read into "shared", wgmma_store_..._shared: 64 x BN int32/float32),
--     and the 128 threads of the warpgroup run the epilogue from it, `vec` consecutive outputs
--     a thread (vectorize: a 16- or 4-byte store of packed int8 / float16 lanes, codegen_cuda.c
--     packs the computed lanes into one store).  The staged rows are padded by 32 bytes, so the
--     wgmma store's 8 rows a warp writes at once spread over the banks.
-- The staged tile reuses the bytes of the A/B pipeline tiles (narrow_shared_allocations and the
-- shared-memory plan make them siblings), so it costs no extra shared memory beyond the larger
-- of the two.
local M = {}
local util = require("tir.util")
local raise = util.raise
local tir = require("tir")

-- whether block b (a tir.Block) is the plain epilogue the store converts itself: out = cast(float16,
-- the float32 accumulator) and nothing else (a relu-only epilogue reads one buffer too, but is staged)
local function plain_cast(b, row)
  local v = b.body.value
  return #b.reads == 1 and row.c == "float32" and b.writes[1].buffer.dtype == "float16" and v ~= nil and v.kind == "Cast" and
         v.value.kind == "BufferLoad"
end

--- Checks opts.epilogue for row (a wgmma row of include/tir/mma.h); returns the epilogue's
-- output dtype, or nil without an epilogue.
function M.validate(sch, o, row, P)
  util.check_helper("tc_gemm_wgmma_epilogue.validate", "tc_gemm.schedule(func, {intrin = \"wgmma\", epilogue = ...})", sch, o, row)
  if not o.epilogue then return nil end
  local okb, E = pcall(function() return sch:get(sch:get_block(o.epilogue)) end)
  if not okb then raise("ValueError", P, "epilogue block '%s' does not exist", o.epilogue) end
  if #E.writes ~= 1 then raise("ValueError", P, "epilogue '%s' must write one buffer (it writes %d)", o.epilogue, #E.writes) end
  -- elementwise in the GEMM's output C: no reduction, C read once, at the written column (the
  -- dimension the accumulator tile and the stores run along); reverse_compute_inline checks the rest
  local cname = sch:get(sch:get_block(o.block or "C")).writes[1].buffer.name
  local wr, crd, ncr = E.writes[1], nil, 0
  for _, rg in ipairs(E.reads) do if rg.buffer.name == cname then crd, ncr = rg, ncr + 1 end end
  local function refuse(why)
    raise("ValueError", P, "epilogue '%s' must be elementwise in %s (out[.., i, j] = f(%s[.., i, j], vectors ...)): %s\n  %s", o.epilogue, cname,
          cname, why, tostring(E.body):gsub("\n", "\n  "))
  end
  for _, iv in ipairs(E.iter_vars) do if iv.iter_type ~= 0 then refuse(("its iteration variable %s is not spatial"):format(iv.var.name)) end end
  if ncr ~= 1 then refuse(("it reads %s %d times"):format(cname, ncr)) end
  local last, wlast = crd.region[#crd.region], wr.region[#wr.region]
  for _, r in ipairs(crd.region) do
    if r.extent.kind ~= "IntImm" or r.extent.value ~= 1 then refuse(("it reads a range of %s, not one element"):format(cname)) end
  end
  if not tir.structural_equal(last.min, wlast.min) then
    refuse(("it reads %s's column %s where it writes column %s"):format(cname, tostring(last.min), tostring(wlast.min)))
  end
  local edt = E.writes[1].buffer.dtype
  local esz = tonumber(edt:match("%d+$")) // 8
  -- a warp-specialized kernel keeps the pipeline tiles allocated through the epilogue (the
  -- producer's branch spans the kernel), and so does a persistent one (the pipeline spans the tile
  -- loop), so the staged accumulators cannot reuse their bytes; with epilogue_store = "tma" the
  -- epilogue's outputs take a dense BM x BN tile of their own beside the staged accumulators
  local plain = plain_cast(E, row) and o.epilogue_store ~= "staged"
  if not plain then
    local asz = tonumber(row.a:match("%d+$")) // 8
    -- (persistent = the tile count: one tile a CTA in the grouped order -- the tile loop has extent 1,
    -- no pipeline spans two tiles, so the staged tile reuses the pipeline's bytes as without persistent)
    local cshape = sch:get(sch:get_block(o.block or "C")).writes[1].buffer.shape
    local tiles = math.type(o.persistent) == "integer" and #cshape >= 2 and
                  (tonumber(tostring(cshape[#cshape - 1])) or 0) // o.BM * ((tonumber(tostring(cshape[#cshape])) or 0) // o.BN) or nil
    local keep = o.warp_specialize or (o.persistent and o.tma and o.persistent ~= tiles)
    local pipe = o.stages * (o.BM + o.BN) * o.BK * asz
    local staged = o.BM * (o.BN + 8) * (tonumber(row.c:match("%d+$")) // 8)
    local out = o.epilogue_store == "tma" and o.BM * o.BN * esz or 0
    local total = keep and pipe + staged + out or math.max(pipe, staged + out)
    if total > 227 * 1024 then
      raise("ValueError", P, "%sepilogue '%s': %s%d x %d staged accumulators (%d bytes)%s = %d bytes > the 227 KB a block may use " ..
            "(fewer stages, a smaller BN%s)",
            o.warp_specialize and "warp_specialize = true with " or (o.persistent and o.tma) and "persistent with " or "", o.epilogue,
            keep and ("the pipeline tiles (%d bytes) stay allocated through the epilogue, beside its "):format(pipe) or "its ",
            o.BM, o.BN, staged, out > 0 and (" and the dense %d x %d tile of %s outputs the TMA store reads (%d bytes)"):format(o.BM, o.BN, edt, out) or "",
            total, out > 0 and ", or epilogue_store = \"staged\"" or (keep and ", or neither warp_specialize nor persistent" or ""))
    end
  end
  local bytes = o.epilogue_vec and o.epilogue_vec * esz
  if bytes and bytes ~= 4 and bytes ~= 8 and bytes ~= 16 then
    raise("ValueError", P, "epilogue_vec = %d outputs of %s = %d bytes a store; a packed store moves 4, 8 or 16 bytes", o.epilogue_vec, edt,
          bytes)
  end
  return edt
end

--- Inlines the epilogue into the accumulator's write-back CF.  Returns the store intrinsic's
-- name (of names: tir.intrin.cuda.wgmma's) and the staged shared tile's block (or nil when
-- the epilogue is fused into the store).  prior: the epilogue reads a producer computed before
-- the GEMM (the row sums of A).
function M.inline(sch, o, row, names, CF, prior)
  util.check_helper("tc_gemm_wgmma_epilogue.inline", "tc_gemm.schedule(func, {intrin = \"wgmma\", epilogue = ...})", sch, o, row, names)
  sch:reverse_compute_inline(o.epilogue, prior)
  local b = sch:get(CF)
  if plain_cast(b, row) and names.store_f16 and o.epilogue_store ~= "staged" then
    return names.store_f16.global, nil
  end
  -- the accumulator among the write-back's reads (the inlined epilogue reads more: a bias ...)
  local acc = 0
  for q, rg in ipairs(b.reads) do if rg.buffer.scope == "wgmma.accumulator" then acc = q - 1 end end
  return names.store.shared, sch:cache_read(CF, acc, "shared")
end

--- Schedules the staged epilogue: CS (the accumulators' shared tile) and CF (the epilogue
-- reading it) under the warpgroup loop wg; the epilogue's 64 x BN outputs over the 128 threads
-- of the warpgroup, vec consecutive outputs each (vectorized).  TS (or nil): epilogue_store =
-- "tma": CF writes the warpgroup's dense 64 x BN shared tile of outputs and TS copies it to
-- global memory (marked tma_store: one cp.async.bulk.tensor store, inject_tma_store.c); TS goes
-- under wg before CF's loops are fused (what CF writes per iteration must stay a box).  Returns
-- the loop to tensorize the wgmma store of CS with.
function M.schedule_staged(sch, o, CS, CF, wg, prior, TS)
  util.check_helper("tc_gemm_wgmma_epilogue.schedule_staged", "tc_gemm.schedule(func, {intrin = \"wgmma\", epilogue = ...})", sch, o)
  sch:reverse_compute_at(CS, wg)
  sch:reverse_compute_at(CF, wg, false, -1, prior)
  if TS then sch:reverse_compute_at(TS, wg) end
  local l = {sch:get_loops(CF)}
  local f = sch:fuse(l[#l - 1], l[#l])
  -- default: 4 outputs a thread: one 4-byte store of int8 (32 lanes = 128 contiguous bytes a
  -- warp), 8 of float16; the 4 accumulators it reads from the staged row are 16 bytes
  local vec = o.epilogue_vec or 4
  local outer, tx, v = sch:split(f, {nil, 128, vec})
  sch:bind(tx, "threadIdx.x")
  sch:vectorize(v)
  if o.unroll then sch:unroll(outer) end
  local sl = {sch:get_loops(CS)}
  return sl[#sl - 1]
end

--- After the staged store is tensorized (ST: its block): the staged rows padded to a row
-- stride of 32 mod 128 bytes, so that the 8 rows a warp's wgmma_store writes at once (8-byte
-- pairs, 4 lanes a row) fall into different banks.
function M.pad_staged(sch, ST)
  sch:storage_align(ST, 0, 0, 32, 8)
end

--- The K-major GEMM with a bias + activation epilogue, the workload of the staged epilogues:
--   C[i, j] = sum_k float32(A[i, k]) * float32(B[j, k])        A: M x K, B: N x K (layout "NT")
--   D[i, j] = dtype(act(C[i, j] + float32(bias[j])))            bias: N of dtype (cuBLASLt's bias type)
-- dtype "float16" | "bfloat16"; act "relu" (default), "gelu" (tanh form: 0.5 v (1 + tanh(sqrt(2/pi)
-- (v + 0.044715 v^3))), Hendrycks & Gimpel), "none" or a function of the float32 te expression.
-- Returns the PrimFunc (params A, B, bias, D; blocks "C" and "D": tc_gemm.schedule(f, {intrin =
-- "wgmma", epilogue = "D", ...})).  Errors: TypeError / ValueError naming the bad argument.
function M.workload(m, n, k, dtype, act)
  local P = "tc_gemm_wgmma_epilogue.workload"
  for q, v in ipairs({m, n, k}) do
    if math.type(v) ~= "integer" or v < 1 then raise("TypeError", P, "%s must be a positive integer, got %s", ({"M", "N", "K"})[q], util.show(v)) end
  end
  if dtype ~= "float16" and dtype ~= "bfloat16" then raise("ValueError", P, "dtype must be \"float16\" or \"bfloat16\", got %s", util.show(dtype)) end
  local te = tir.te
  local function c(x) return tir.const(x, "float32") end
  local acts = {relu = function(v) return tir.max(v, c(0)) end, none = function(v) return v end,
                gelu = function(v) return c(0.5) * v * (c(1) + tir.tanh(c(0.7978845608028654) * (v + c(0.044715) * v * v * v))) end}
  local f = type(act) == "function" and act or acts[act or "relu"]
  if not f then raise("ValueError", P, "act must be \"relu\", \"gelu\", \"none\" or a function of the value, got %s", util.show(act)) end
  local A = te.placeholder({m, k}, dtype, "A")
  local B = te.placeholder({n, k}, dtype, "B")
  local bias = te.placeholder({n}, dtype, "bias")
  local r = te.reduce_axis({0, k}, "k")
  local C = te.compute({m, n}, function(i, j) return te.sum(te.cast("float32", A[{i, r}]) * te.cast("float32", B[{j, r}]), {r}) end, "C")
  local D = te.compute({m, n}, function(i, j) return te.cast(dtype, f(C[{i, j}] + te.cast("float32", bias[{j}]))) end, "D")
  return te.create_prim_func({A, B, bias, D})
end

M.validate = util.strict("tc_gemm_wgmma_epilogue.validate", M.validate)
M.inline = util.strict("tc_gemm_wgmma_epilogue.inline", M.inline)
M.schedule_staged = util.strict("tc_gemm_wgmma_epilogue.schedule_staged", M.schedule_staged)
M.pad_staged = util.strict("tc_gemm_wgmma_epilogue.pad_staged", M.pad_staged)
M.workload = util.strict("tc_gemm_wgmma_epilogue.workload", M.workload)
return M
