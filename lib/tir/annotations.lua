--- tir.annotations: the annotation keys tirlua interprets, in one table, and the check that
-- catches misspellings of them (sch:annotate, T.block_attr, loop annotations in the T script).
--
-- Rule: annotations are free-form as in TVM (any string key is kept, printed and ignored by
-- the passes), except that a key that is not in KNOWN is refused when
--   * it starts with a reserved prefix ("software_pipeline_", "tensor_intrin",
--     "buffer_dim_align", "tma_"): tirlua owns those names, so an unknown one is a misspelling; or
--   * it is within edit distance 2 of a known key (1 for short keys), e.g.
--     "software_pipline_stage" or "software_pipeline_stages".
-- The error says "did you mean" and lists the known keys.  Keys further away are user keys.
local util = require("tir.util")
local A = {}

--- key -> {on = "loop" | "block", set_by = who normally writes it, doc = what it does}
A.KNOWN = {
  software_pipeline_stage = {on = "loop", set_by = "user", doc = "stage of each child statement (inject_software_pipeline)"},
  software_pipeline_order = {on = "loop", set_by = "user", doc = "order of the child statements in the pipeline body"},
  software_pipeline_async_stages = {on = "loop", set_by = "user", doc = "stages whose copies become cp.async"},
  software_pipeline_early_wait = {on = "loop", set_by = "user",
                                  doc = "1: one cp.async wait at the top of each iteration; 2: before the first consumer of the lowest stage (tirlua)"},
  software_pipeline_nested = {on = "loop", set_by = "user",
                              doc = "an inner pipelined loop counts as the statements its rewrite emitted, as in TVM (tirlua)"},
  software_pipeline_unroll = {on = "loop", set_by = "user",
                              doc = "1: the steady state one instance per iteration (a nested parent lists each instance's statements; tirlua)"},
  software_pipeline_modulo_expand = {on = "loop", set_by = "user",
                                     doc = "1: the steady state unrolled by the versions' common multiple, version indices constant (tirlua)"},
  software_pipeline_async_reads = {on = "loop", set_by = "user",
                                   doc = "per statement, iterations its shared reads stay in flight (wgmma_wait_group 1; tirlua)"},
  tma_pipeline_stages = {on = "loop", set_by = "user", doc = "stages of a TMA + mbarrier pipeline (inject_tma_pipeline)"},
  tma_copy = {on = "block", set_by = "user", doc = "this global -> shared copy becomes one TMA copy per tile (inject_tma_pipeline)"},
  warp_specialize = {on = "loop", set_by = "user",
                     doc = "{producer warpgroups (1), producer regs, consumer regs}: the TMA pipeline's copies on a producer warpgroup " ..
                           "(inject_warp_specialization)"},
  tma_cluster = {on = "loop", set_by = "user",
                 doc = "{x, y, z}: the kernel of this TMA pipeline runs as thread-block clusters of that shape (inject_tma_pipeline)"},
  tma_multicast = {on = "block", set_by = "user",
                   doc = "{stride, count}: the count CTAs of ranks base + j * stride share this TMA copy, each loading 1/count of its " ..
                         "rows and multicasting them (inject_tma_pipeline)"},
  tma_store = {on = "block", set_by = "user", doc = "this shared -> global tile copy becomes one TMA store (inject_tma_store)"},
  tma_im2col = {on = "block", set_by = "user",
                doc = "{pt, pl, sh, sw, dh, dw, P, Q, R, S}: this im2col block (a conv's A tile from NHWC X) becomes one TMA im2col " ..
                      "copy per tile, checked against that convolution (inject_tma_pipeline)"},
  grid_last_waits = {on = "loop", set_by = "user",
                     doc = "1 on a blockIdx loop with code after it: its last iteration's CTA waits (tir_grid_wait) until the other " ..
                           "iterations' CTAs have arrived before its atomic adds (mma_store \"add\"; lower_grid_tail)"},
  tensor_intrin = {on = "block", set_by = "tensorize", doc = "the intrinsic a tensorized block runs"},
  buffer_dim_align = {on = "block", set_by = "storage_align", doc = "stride padding of the written buffers"},
  buffer_swizzle = {on = "block", set_by = "storage_swizzle", doc = "XOR swizzle of the written shared buffers ({index, B, M, S})"},
}

A.RESERVED_PREFIXES = {"software_pipeline_", "tensor_intrin", "buffer_dim_align", "buffer_swizzle", "tma_"}

local names = util.sorted_keys(A.KNOWN)

--- Raises a ValueError from prim when key looks like a misspelled known key (see the rule above).
function A.check_key(prim, key)
  if type(key) ~= "string" then util.raise("TypeError", prim, "an annotation key must be a string, got %s", util.show(key)) end
  if A.KNOWN[key] then return key end
  local near = util.closest(key, names)
  local reserved
  for _, p in ipairs(A.RESERVED_PREFIXES) do
    if key:sub(1, #p) == p then reserved = p end
  end
  if near or reserved then
    if not near then -- the closest known key with that prefix
      local bd
      for _, n in ipairs(names) do
        local d = util.edit_distance(key, n)
        if n:sub(1, #reserved) == reserved and (not bd or d < bd) then near, bd = n, d end
      end
    end
    util.raise("ValueError", prim,
               "annotation key '%s' is not one tirlua knows%s (did you mean '%s'?): it would be kept and ignored. " ..
               "Known keys: %s. Keys far from these are user annotations and are allowed",
               key, reserved and (" but uses the reserved prefix '" .. reserved .. "'") or "", near, table.concat(names, ", "))
  end
  return key
end

--- Checks every key of an annotation table {key = value}.
function A.check_table(prim, t)
  if t == nil then return end
  if type(t) ~= "table" then util.raise("TypeError", prim, "annotations must be a table {key = value}, got %s", util.show(t)) end
  for k in pairs(t) do A.check_key(prim, k) end
end

return A
