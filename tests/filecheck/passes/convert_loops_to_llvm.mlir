// RUN: byoc-opt %s -p convert-loops-to-llvm --split-input-file | filecheck %s

// The host side of the BYOC guide's example: tanh into a heap buffer, then an
// outlined kernel. Memrefs are noalias pointers, the 2-D access is one GEP at
// i * 10 + j, alloc/dealloc call malloc/free, tanh calls libm. A NULL from
// malloc returns status 2 (out of memory), the size kept for the error.
// CHECK:       llvm.mlir.global internal @byoc_failed_bytes(0 : i64)
// CHECK-DAG:   llvm.func @free(!llvm.ptr)
// CHECK-DAG:   llvm.func @tanhf(f32) -> f32
// CHECK-DAG:   llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG:   llvm.func @byoc_ab12_ccompiler_0(!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-LABEL: llvm.func @main(%arg0: !llvm.ptr {llvm.noalias}, %arg1: !llvm.ptr {llvm.noalias}, %arg2: !llvm.ptr {llvm.noalias}) -> i32 {
// CHECK:         %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK:         %[[C1:.*]] = llvm.mlir.constant(1) : i64
// CHECK:         %[[C10:.*]] = llvm.mlir.constant(10) : i64
// CHECK:         %[[SIZE:.*]] = llvm.mlir.constant(400) : i64
// CHECK-NEXT:    %[[BUF:.*]] = llvm.call @malloc(%[[SIZE]]) : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[ADDR:.*]] = llvm.ptrtoint %[[BUF]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[NULL:.*]] = llvm.icmp "eq" %[[ADDR]], %[[ZERO]] : i64
// CHECK-NEXT:    llvm.cond_br %[[NULL]], ^[[OOM:.*]], ^[[OK:.*]]
// CHECK-NEXT:  ^[[OK]]:
// CHECK-NEXT:    llvm.br ^[[OUTER:.*]](%[[C0]] : i64)
// CHECK-NEXT:  ^[[OOM]]:
// CHECK-NEXT:    %[[CELL:.*]] = llvm.mlir.addressof @byoc_failed_bytes : !llvm.ptr
// CHECK-NEXT:    llvm.store %[[SIZE]], %[[CELL]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:    llvm.return %[[TWO]] : i32
// CHECK-NEXT:  ^[[OUTER]](%[[I:.*]]: i64):
// CHECK-NEXT:    %[[IN:.*]] = llvm.icmp "slt" %[[I]], %[[C10]] : i64
// CHECK-NEXT:    llvm.cond_br %[[IN]], ^{{.*}}, ^[[DONE:.*]]
// CHECK:       ^[[INNER:.*]](%[[J:.*]]: i64):
// CHECK:         %[[STRIDE:.*]] = llvm.mlir.constant(10) : i64
// CHECK-NEXT:    %[[ROW:.*]] = llvm.mul %[[I]], %[[STRIDE]] overflow<nsw> : i64
// CHECK-NEXT:    %[[OFF:.*]] = llvm.add %[[ROW]], %[[J]] overflow<nsw> : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %arg0[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[A:.*]] = llvm.load %[[P]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call @tanhf(%[[A]]) : (f32) -> f32
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %[[BUF]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[T]], %[[Q]] : f32, !llvm.ptr
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %[[J]], %[[C1]] : i64
// CHECK-NEXT:    llvm.br ^[[INNER]](%[[NEXT]] : i64)
// CHECK:       ^[[DONE]]:
// CHECK-NEXT:    %[[ST:.*]] = llvm.call @byoc_ab12_ccompiler_0(%[[BUF]], %arg1, %arg2) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:    llvm.call @free(%[[BUF]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return %[[ST]] : i32
// CHECK-NOT:   memref.
// CHECK-NOT:   scf.
func.func private @byoc_ab12_ccompiler_0(memref<10x10xf32>, memref<10x10xf32>, memref<10x10xf32>) -> i32
func.func @main(%arg0: memref<10x10xf32>, %arg1: memref<10x10xf32>, %arg2: memref<10x10xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %buf = memref.alloc() : memref<10x10xf32>
  scf.for %i = %c0 to %c10 step %c1 {
    scf.for %j = %c0 to %c10 step %c1 {
      %a = memref.load %arg0[%i, %j] : memref<10x10xf32>
      %t = math.tanh %a : f32
      memref.store %t, %buf[%i, %j] : memref<10x10xf32>
    }
  }
  %st = func.call @byoc_ab12_ccompiler_0(%buf, %arg1, %arg2) : (memref<10x10xf32>, memref<10x10xf32>, memref<10x10xf32>) -> i32
  memref.dealloc %buf : memref<10x10xf32>
  func.return %st : i32
}

// -----

// A reduction through a rank-0 alloca: the alloca moves to the entry block
// (where mem2reg promotes it), rank-0 accesses use the pointer itself.
// CHECK-LABEL: llvm.func @reduce(%a: !llvm.ptr {llvm.noalias}, %out: !llvm.ptr {llvm.noalias}) -> i32 {
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[ACC:.*]] = llvm.alloca %[[ONE]] x f32 {alignment = 4 : i64} : (i64) -> !llvm.ptr
// CHECK:         llvm.store %{{.*}}, %[[ACC]] : f32, !llvm.ptr
// CHECK:         %[[S:.*]] = llvm.load %[[ACC]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[T:.*]] = llvm.fadd %[[S]], %{{.*}} : f32
// CHECK-NEXT:    llvm.store %[[T]], %[[ACC]] : f32, !llvm.ptr
// CHECK:         %[[R:.*]] = llvm.load %[[ACC]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %out[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[R]], %[[P]] : f32, !llvm.ptr
// CHECK-NOT:     llvm.alloca
func.func @reduce(%a: memref<4x8xf32>, %out: memref<4xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %acc = memref.alloca() : memref<f32>
    memref.store %zero, %acc[] : memref<f32>
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<4x8xf32>
      %s = memref.load %acc[] : memref<f32>
      %t = arith.addf %s, %x : f32
      memref.store %t, %acc[] : memref<f32>
    }
    %r = memref.load %acc[] : memref<f32>
    memref.store %r, %out[%i] : memref<4xf32>
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// -----

// scf.if with an else: a conditional branch to the two blocks, both joining.
// CHECK-LABEL: llvm.func @leaky(
// CHECK:         %[[POS:.*]] = llvm.fcmp "ogt" %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    llvm.cond_br %[[POS]], ^[[THEN:.*]], ^[[ELSE:.*]]
// CHECK-NEXT:  ^[[THEN]]:
// CHECK-NEXT:    llvm.getelementptr
// CHECK-NEXT:    llvm.store
// CHECK-NEXT:    llvm.br ^[[JOIN:.*]]
// CHECK-NEXT:  ^[[ELSE]]:
// CHECK-NEXT:    llvm.getelementptr
// CHECK-NEXT:    llvm.store
// CHECK-NEXT:    llvm.br ^[[JOIN]]
// CHECK-NEXT:  ^[[JOIN]]:
// CHECK-NEXT:    llvm.add
func.func @leaky(%a: memref<8xf32>, %out: memref<8xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %pos = arith.cmpf ogt, %x, %zero : f32
    scf.if %pos {
      memref.store %x, %out[%i] : memref<8xf32>
    } else {
      memref.store %zero, %out[%i] : memref<8xf32>
    }
  }
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// -----

// Scalar arith and math: NaN-propagating maximum, exact rsqrt, erf from libm,
// saturating fptosi, index casts as sext/trunc.
// CHECK:       llvm.func @erff(f32) -> f32
// CHECK-LABEL: llvm.func @scalars(
// CHECK-NEXT:    %[[X:.*]] = llvm.load %a : !llvm.ptr -> f32
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[X]], %[[X]]) : (f32, f32) -> f32
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[SQRT:.*]] = llvm.intr.sqrt(%[[M]]) : (f32) -> f32
// CHECK-NEXT:    %[[R:.*]] = llvm.fdiv %[[ONE]], %[[SQRT]] : f32
// CHECK-NEXT:    %[[E:.*]] = llvm.call @erff(%[[R]]) : (f32) -> f32
// CHECK-NEXT:    %[[K:.*]] = llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"(%[[E]]) : (f32) -> i32
// CHECK-NEXT:    %[[I:.*]] = llvm.sext %[[K]] : i32 to i64
// CHECK-NEXT:    %[[J:.*]] = llvm.trunc %[[I]] : i64 to i32
// CHECK-NEXT:    %[[F:.*]] = llvm.sitofp %[[J]] : i32 to f32
// CHECK-NEXT:    %[[P:.*]] = llvm.intr.pow(%[[F]], %[[X]]) : (f32, f32) -> f32
// CHECK-NEXT:    llvm.store %[[P]], %out : f32, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[J]], %n : i32, !llvm.ptr
func.func @scalars(%a: memref<f32>, %out: memref<f32>, %n: memref<i32>) -> i32 {
  %x = memref.load %a[] : memref<f32>
  %m = arith.maximumf %x, %x : f32
  %r = math.rsqrt %m : f32
  %e = math.erf %r : f32
  %k = arith.fptosi %e : f32 to i32
  %i = arith.index_cast %k : i32 to index
  %j = arith.index_cast %i : index to i32
  %f = arith.sitofp %j : i32 to f32
  %p = math.powf %f, %x : f32
  memref.store %p, %out[] : memref<f32>
  memref.store %j, %n[] : memref<i32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// -----

// Trigonometric functions: sin and cos are LLVM intrinsics; the rest call libm
// (the f suffix for f32, through f32 for f16, none for f64).
// CHECK-DAG:   llvm.func @atanhf(f32) -> f32
// CHECK-DAG:   llvm.func @acos(f64) -> f64
// CHECK-DAG:   llvm.func @tanf(f32) -> f32
// CHECK-LABEL: llvm.func @trig(
// CHECK:         %[[S:.*]] = llvm.intr.sin(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    %[[C:.*]] = llvm.intr.cos(%[[S]]) : (f32) -> f32
// CHECK-NEXT:    %[[A:.*]] = llvm.call @atanhf(%[[C]]) : (f32) -> f32
// CHECK:         %{{.*}} = llvm.call @acos(%{{.*}}) : (f64) -> f64
// CHECK:         %[[W:.*]] = llvm.fpext %{{.*}} : f16 to f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call @tanf(%[[W]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.fptrunc %[[T]] : f32 to f16
func.func @trig(%a: memref<f32>, %b: memref<f64>, %h: memref<f16>) -> i32 {
  %x = memref.load %a[] : memref<f32>
  %s = math.sin %x : f32
  %c = math.cos %s : f32
  %t = math.atanh %c : f32
  memref.store %t, %a[] : memref<f32>
  %y = memref.load %b[] : memref<f64>
  %ac = math.acos %y : f64
  memref.store %ac, %b[] : memref<f64>
  %z = memref.load %h[] : memref<f16>
  %tz = math.tan %z : f16
  memref.store %tz, %h[] : memref<f16>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

// -----

// A constant global becomes a flat llvm global; a private function with a body
// gets internal linkage; calls stay direct.
// CHECK:       llvm.mlir.global internal constant @w(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<6xf32>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<6 x f32>
// CHECK-LABEL: llvm.func internal @helper(%w: !llvm.ptr {llvm.noalias}, %out: !llvm.ptr {llvm.noalias}) -> i32 {
// CHECK-LABEL: llvm.func @uses_global(
// CHECK-NEXT:    %[[W:.*]] = llvm.mlir.addressof @w : !llvm.ptr
// CHECK-NEXT:    %[[ST:.*]] = llvm.call @helper(%[[W]], %{{.*}}) : (!llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:    llvm.return %[[ST]] : i32
"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<2x3xf32>, initial_value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>, constant}> : () -> ()
func.func private @helper(%w: memref<2x3xf32>, %out: memref<2x3xf32>) -> i32 {
  %c1 = arith.constant 1 : index
  %x = memref.load %w[%c1, %c1] : memref<2x3xf32>
  memref.store %x, %out[%c1, %c1] : memref<2x3xf32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}
func.func @uses_global(%out: memref<2x3xf32>) -> i32 {
  %w = memref.get_global @w : memref<2x3xf32>
  %st = func.call @helper(%w, %out) : (memref<2x3xf32>, memref<2x3xf32>) -> i32
  func.return %st : i32
}
