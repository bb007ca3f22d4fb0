// RUN: byoc-opt %s -p convert-loops-to-emitc | filecheck %s
// RUN: byoc-opt %s -p convert-loops-to-emitc | filecheck %s --check-prefix=HELPER
// RUN: byoc-opt %s -p 'convert-loops-to-emitc{symbol_prefix=byoc_1a2b3c4d_}' | filecheck %s --check-prefix=PREFIX
// RUN: byoc-opt %s -p convert-loops-to-emitc | byoc-opt --print-op-generic | byoc-opt | filecheck %s

// Called functions defined in the module are declared first; the global becomes a
// flat static array; a declaration keeps its symbol and its parameters are restrict.
// The module's allocations record a failure's size in an exported global named
// after its first function.
// CHECK:       builtin.module {
// CHECK-NEXT:    emitc.declare_func @memory
// CHECK-NEXT:    emitc.global @ccompiler_0_failed_bytes : i64 = 0
// CHECK-NEXT:    emitc.global static const @weights : !emitc.array<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK-NEXT:    emitc.func private @external(!emitc.ptr<f32> {emitc.restrict}, !emitc.ptr<f32> {emitc.restrict}) -> i32 attributes {specifiers = ["extern"]}
// PREFIX:        emitc.declare_func @byoc_1a2b3c4d_memory
// PREFIX:        emitc.func private @external(
"memref.global"() <{sym_name = "weights", sym_visibility = "private", type = memref<2x2xf32>, initial_value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>, constant}> : () -> ()

func.func private @external(memref<4xf32>, memref<f32>) -> i32

// An outlined kernel: exported (no specifier), inputs `const restrict`, the output
// `restrict`, index is i64, loads and stores are row-major subscripts.
// CHECK-LABEL: emitc.func @ccompiler_0(%arg0: !emitc.ptr<f32> {emitc.const, emitc.restrict}, %arg1: !emitc.ptr<f32> {emitc.const, emitc.restrict}, %arg2: !emitc.ptr<f32> {emitc.restrict}) -> i32 {
// CHECK-NEXT:    %c0 = "emitc.constant"() <{value = 0 : i64}> : () -> i64
// CHECK-NEXT:    %c1 = "emitc.constant"() <{value = 1 : i64}> : () -> i64
// CHECK-NEXT:    %c10 = "emitc.constant"() <{value = 10 : i64}> : () -> i64
// CHECK-NEXT:    emitc.for %i = %c0 to %c10 step %c1 : i64 {
// CHECK-NEXT:      emitc.for %j = %c0 to %c10 step %c1 : i64 {
// CHECK-NEXT:        %[[C:.*]] = "emitc.constant"() <{value = 10 : i64}> : () -> i64
// CHECK-NEXT:        %[[ROW:.*]] = emitc.mul %i, %[[C]] : (i64, i64) -> i64
// CHECK-NEXT:        %[[LIN:.*]] = emitc.add %[[ROW]], %j : (i64, i64) -> i64
// CHECK-NEXT:        %[[LV:.*]] = emitc.subscript %arg0[%[[LIN]]] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
// CHECK-NEXT:        %a = emitc.load %[[LV]] : !emitc.lvalue<f32>
// CHECK:             %b = emitc.load %{{.*}} : !emitc.lvalue<f32>
// CHECK-NEXT:        %s = emitc.add %a, %b : (f32, f32) -> f32
// CHECK:             %[[OUT:.*]] = emitc.subscript %arg2[%{{.*}}] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
// CHECK-NEXT:        emitc.assign %s : f32 to %[[OUT]] : !emitc.lvalue<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    %ok = "emitc.constant"() <{value = 0 : i32}> : () -> i32
// CHECK-NEXT:    emitc.return %ok : i32
// CHECK-NEXT:  }
// PREFIX-LABEL: emitc.func @byoc_1a2b3c4d_ccompiler_0(
func.func @ccompiler_0(%arg0: memref<10x10xf32>, %arg1: memref<10x10xf32>, %arg2: memref<10x10xf32>) -> i32 attributes {extern.compiler = "ccompiler"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  scf.for %i = %c0 to %c10 step %c1 {
    scf.for %j = %c0 to %c10 step %c1 {
      %a = memref.load %arg0[%i, %j] : memref<10x10xf32>
      %b = memref.load %arg1[%i, %j] : memref<10x10xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %arg2[%i, %j] : memref<10x10xf32>
    }
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// A called helper is static. alloc is malloc with a NULL check, alloca a local
// array, get_global a pointer to the global, dealloc free; rank 0 is index 0.
// CHECK-LABEL: emitc.func @memory(%in: !emitc.ptr<f32> {emitc.const, emitc.restrict}, %out: !emitc.ptr<f32> {emitc.restrict}) -> i32 attributes {specifiers = ["static"]} {
// CHECK-NEXT:    %[[G:.*]] = emitc.get_global @weights : !emitc.array<4xf32>
// CHECK-NEXT:    %w = emitc.cast %[[G]] : !emitc.array<4xf32> to !emitc.ptr<f32>
// CHECK-NEXT:    %[[N:.*]] = "emitc.constant"() <{value = 4 : index}> : () -> !emitc.size_t
// CHECK-NEXT:    %[[SZ:.*]] = emitc.call_opaque "sizeof"() {args = [f32]} : () -> !emitc.size_t
// CHECK-NEXT:    %[[BYTES:.*]] = emitc.mul %[[N]], %[[SZ]] : (!emitc.size_t, !emitc.size_t) -> !emitc.size_t
// CHECK-NEXT:    %[[RAW:.*]] = emitc.call_opaque "malloc"(%[[BYTES]]) : (!emitc.size_t) -> !emitc.ptr<!emitc.opaque<"void">>
// CHECK-NEXT:    %tmp = emitc.cast %[[RAW]] : !emitc.ptr<!emitc.opaque<"void">> to !emitc.ptr<f32>
// CHECK-NEXT:    %[[NULL:.*]] = emitc.literal "NULL" : !emitc.ptr<f32>
// CHECK-NEXT:    %[[FAILED:.*]] = emitc.cmp eq, %tmp, %[[NULL]] : (!emitc.ptr<f32>, !emitc.ptr<f32>) -> i1
// CHECK-NEXT:    emitc.verbatim "if ({}) {{[{][{]}} ccompiler_0_failed_bytes = (int64_t){}; return 2; }" args %[[FAILED]], %[[BYTES]] : i1, !emitc.size_t
// CHECK-NEXT:    %[[ARR:.*]] = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.array<1xf32>
// CHECK-NEXT:    %acc = emitc.cast %[[ARR]] : !emitc.array<1xf32> to !emitc.ptr<f32>
// CHECK:         %x = emitc.load %{{.*}} : !emitc.lvalue<f32>
// CHECK-NEXT:    %[[ZERO:.*]] = "emitc.constant"() <{value = 0 : i64}> : () -> i64
// CHECK-NEXT:    %[[ACC:.*]] = emitc.subscript %acc[%[[ZERO]]] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
// CHECK-NEXT:    emitc.assign %x : f32 to %[[ACC]] : !emitc.lvalue<f32>
// CHECK-NEXT:    %s = emitc.call @external(%tmp, %acc) : (!emitc.ptr<f32>, !emitc.ptr<f32>) -> i32
// CHECK-NEXT:    emitc.call_opaque "free"(%tmp) : (!emitc.ptr<f32>) -> ()
// CHECK:         emitc.return %s : i32
// PREFIX-LABEL: emitc.func @byoc_1a2b3c4d_memory(
// PREFIX:         emitc.call @external(
func.func @memory(%in: memref<2x2xf32>, %out: memref<f32>) -> i32 {
  %w = memref.get_global @weights : memref<2x2xf32>
  %tmp = memref.alloc() : memref<4xf32>
  %acc = memref.alloca() : memref<f32>
  %c0 = arith.constant 0 : index
  %x = memref.load %w[%c0, %c0] : memref<2x2xf32>
  memref.store %x, %acc[] : memref<f32>
  %s = func.call @external(%tmp, %acc) : (memref<4xf32>, memref<f32>) -> i32
  memref.dealloc %tmp : memref<4xf32>
  %y = memref.load %in[%c0, %c0] : memref<2x2xf32>
  memref.store %y, %out[] : memref<f32>
  func.return %s : i32
}

// Memrefs passed to a call are not const.
// CHECK-LABEL: emitc.func @caller(%in: !emitc.ptr<f32> {emitc.restrict}, %out: !emitc.ptr<f32> {emitc.restrict}) -> i32 {
// CHECK-NEXT:    %s = emitc.call @memory(%in, %out) : (!emitc.ptr<f32>, !emitc.ptr<f32>) -> i32
// CHECK-NEXT:    emitc.return %s : i32
// PREFIX-LABEL: emitc.func @byoc_1a2b3c4d_caller(
// PREFIX-NEXT:    emitc.call @byoc_1a2b3c4d_memory(%in, %out)
func.func @caller(%in: memref<2x2xf32>, %out: memref<f32>) -> i32 {
  %s = func.call @memory(%in, %out) : (memref<2x2xf32>, memref<f32>) -> i32
  func.return %s : i32
}

// maximumf: a call of a helper defined once before the first function, in
// which a NaN operand wins, then the larger one, then +0 over -0.
// HELPER:        emitc.verbatim "static inline float byoc_maximumf(float a, float b) { float m = (a > b || a != a) ? a : b; float t = __builtin_signbit(a) ? b : a; return a == b ? t : m; }"
// CHECK-LABEL: emitc.func @max(%x: f32, %y: f32, %out: !emitc.ptr<f32> {emitc.restrict}) -> i32 {
// CHECK-NEXT:    %[[M:.*]] = emitc.call_opaque "byoc_maximumf"(%x, %y) : (f32, f32) -> f32
// CHECK-NEXT:    %[[Z:.*]] = "emitc.constant"() <{value = 0 : i64}> : () -> i64
// CHECK-NEXT:    %[[LV:.*]] = emitc.subscript %out[%[[Z]]] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
// CHECK-NEXT:    emitc.assign %[[M]] : f32 to %[[LV]] : !emitc.lvalue<f32>
func.func @max(%x: f32, %y: f32, %out: memref<f32>) -> i32 {
  %m = arith.maximumf %x, %y : f32
  memref.store %m, %out[] : memref<f32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// CHECK-LABEL: emitc.func @scalar_ops(%x: f32, %i: i64, %n: i32, %out: !emitc.ptr<f32> {emitc.restrict}, %iout: !emitc.ptr<i32> {emitc.restrict}) -> i32 {
// CHECK-NEXT:    %neg = emitc.unary_minus %x : (f32) -> f32
// CHECK-NEXT:    %t = emitc.call_opaque "tanhf"(%neg) : (f32) -> f32
// CHECK-NEXT:    %[[ONE:.*]] = "emitc.constant"() <{value = 1.000000e+00 : f32}> : () -> f32
// CHECK-NEXT:    %[[ROOT:.*]] = emitc.call_opaque "sqrtf"(%t) : (f32) -> f32
// CHECK-NEXT:    %[[R:.*]] = emitc.div %[[ONE]], %[[ROOT]] : (f32, f32) -> f32
// CHECK-NEXT:    %[[LE:.*]] = emitc.cmp le, %[[R]], %x : (f32, f32) -> i1
// CHECK-NEXT:    %[[UGT:.*]] = emitc.logical_not %[[LE]] : i1
// CHECK-NEXT:    %[[LT:.*]] = emitc.cmp lt, %[[R]], %x : (f32, f32) -> i1
// CHECK-NEXT:    %[[GT:.*]] = emitc.cmp gt, %[[R]], %x : (f32, f32) -> i1
// CHECK-NEXT:    %[[ONE_:.*]] = emitc.logical_or %[[LT]], %[[GT]] : i1, i1
// CHECK-NEXT:    %[[UL:.*]] = emitc.cast %n : i32 to ui32
// CHECK-NEXT:    %[[UR:.*]] = emitc.cast %n : i32 to ui32
// CHECK-NEXT:    %[[ULT:.*]] = emitc.cmp lt, %[[UL]], %[[UR]] : (ui32, ui32) -> i1
// CHECK-NEXT:    %[[QL:.*]] = emitc.cast %n : i32 to ui32
// CHECK-NEXT:    %[[QR:.*]] = emitc.cast %n : i32 to ui32
// CHECK-NEXT:    %[[UQ:.*]] = emitc.div %[[QL]], %[[QR]] : (ui32, ui32) -> ui32
// CHECK-NEXT:    %[[Q:.*]] = emitc.cast %[[UQ]] : ui32 to i32
// CHECK-NEXT:    %i32 = emitc.cast %i : i64 to i32
// CHECK-NEXT:    %f = emitc.cast %i32 : i32 to f32
// CHECK-NEXT:    %sel = emitc.conditional %[[UGT]], %f, %x : f32
// CHECK-NEXT:    %both = emitc.bitwise_and %[[ONE_]], %[[ULT]] : (i1, i1) -> i1
// CHECK-NEXT:    %sel2 = emitc.conditional %both, %sel, %x : f32
// CHECK-NEXT:    %e = emitc.cast %sel2 : f32 to f64
// CHECK-NEXT:    %back = emitc.cast %e : f64 to i32
// CHECK-NEXT:    %sum = emitc.add %back, %[[Q]] : (i32, i32) -> i32
// CHECK-NEXT:    %[[Z0:.*]] = "emitc.constant"() <{value = 0 : i64}> : () -> i64
// CHECK-NEXT:    %[[O:.*]] = emitc.subscript %out[%[[Z0]]] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
// CHECK-NEXT:    emitc.assign %sel2 : f32 to %[[O]] : !emitc.lvalue<f32>
// CHECK-NEXT:    %[[Z1:.*]] = "emitc.constant"() <{value = 0 : i64}> : () -> i64
// CHECK-NEXT:    %[[IO:.*]] = emitc.subscript %iout[%[[Z1]]] : (!emitc.ptr<i32>, i64) -> !emitc.lvalue<i32>
// CHECK-NEXT:    emitc.assign %sum : i32 to %[[IO]] : !emitc.lvalue<i32>
// CHECK-NEXT:    emitc.return %sum : i32
func.func @scalar_ops(%x: f32, %i: index, %n: i32, %out: memref<f32>, %iout: memref<i32>) -> i32 {
  %neg = arith.negf %x : f32
  %t = math.tanh %neg : f32
  %r = math.rsqrt %t : f32
  %c = arith.cmpf ugt, %r, %x : f32
  %o = arith.cmpf one, %r, %x : f32
  %u = arith.cmpi ult, %n, %n : i32
  %q = arith.divui %n, %n : i32
  %i64 = arith.index_cast %i : index to i64
  %i32 = arith.index_cast %i : index to i32
  %f = arith.sitofp %i32 : i32 to f32
  %sel = arith.select %c, %f, %x : f32
  %both = arith.andi %o, %u : i1
  %sel2 = arith.select %both, %sel, %x : f32
  %e = arith.extf %sel2 : f32 to f64
  %back = arith.fptosi %e : f64 to i32
  %sum = arith.addi %back, %q : i32
  memref.store %sel2, %out[] : memref<f32>
  memref.store %sum, %iout[] : memref<i32>
  func.return %sum : i32
}

// Integer arithmetic marked to wrap is computed unsigned, at least 32 bits wide
// (signed overflow is undefined in C; 16-bit operands would be promoted to a
// signed int), and converted back; unmarked integer arithmetic stays as it is.
// CHECK-LABEL: emitc.func @wrapping(
// CHECK:         %[[A:.*]] = emitc.cast %{{.*}} : i16 to ui32
// CHECK-NEXT:    %[[B:.*]] = emitc.cast %{{.*}} : i16 to ui32
// CHECK-NEXT:    %[[M:.*]] = emitc.mul %[[A]], %[[B]] : (ui32, ui32) -> ui32
// CHECK-NEXT:    emitc.cast %[[M]] : ui32 to i16
// CHECK:         %[[C:.*]] = emitc.cast %{{.*}} : i64 to ui64
// CHECK-NEXT:    %[[D:.*]] = emitc.cast %{{.*}} : i64 to ui64
// CHECK-NEXT:    %[[S:.*]] = emitc.add %[[C]], %[[D]] : (ui64, ui64) -> ui64
// CHECK-NEXT:    emitc.cast %[[S]] : ui64 to i64
// CHECK:         emitc.sub %{{.*}}, %{{.*}} : (i64, i64) -> i64
func.func @wrapping(%x: memref<2xi16>, %a: memref<2xi64>, %o16: memref<2xi16>, %o64: memref<2xi64>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = arith.constant 0 : i32
  %x0 = memref.load %x[%c0] : memref<2xi16>
  %x1 = memref.load %x[%c1] : memref<2xi16>
  %a0 = memref.load %a[%c0] : memref<2xi64>
  %a1 = memref.load %a[%c1] : memref<2xi64>
  %0 = arith.muli %x0, %x1 {byoc.wraps} : i16
  %1 = arith.addi %a0, %a1 {byoc.wraps} : i64
  %2 = arith.subi %1, %a1 : i64
  memref.store %0, %o16[%c0] : memref<2xi16>
  memref.store %2, %o64[%c0] : memref<2xi64>
  func.return %s : i32
}
