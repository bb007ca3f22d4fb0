// RUN: byoc-opt %s -p byoc-mark-parallel-loops | filecheck %s
// RUN: byoc-opt %s -p 'byoc-mark-parallel-loops{min_work=100000000}' | filecheck %s --check-prefix=SMALL
// RUN: byoc-opt %s -p byoc-mark-parallel-loops,convert-loops-to-emitc | filecheck %s --check-prefix=EMITC

// byoc-mark-parallel-loops: the outermost loop whose iterations touch disjoint
// slices of every buffer they store to, with enough work, gets byoc.parallel,
// and byoc.chunks: its work (trips times ops) in pieces of 32768 ops.

// SMALL-NOT: byoc.parallel

// Elementwise: the outer loop is marked, the inner one is not looked at.
// CHECK-LABEL: func.func @elementwise
// CHECK:         scf.for %j
// CHECK:         }
// CHECK-NEXT:    } {byoc.parallel, byoc.chunks = 8 : i64}
// The marks stay on the emitc.for (byoc-outline-parallel-loops reads them).
// EMITC-LABEL: emitc.func @elementwise
// EMITC:         emitc.for %i
// EMITC:           emitc.for %j
// EMITC:             emitc.assign
// EMITC-NEXT:      }
// EMITC-NEXT:    } attributes {byoc.parallel, byoc.chunks = 8 : i64}
func.func @elementwise(%a: memref<256x256xf32>, %b: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %a[%i, %j] : memref<256x256xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %b[%i, %j] : memref<256x256xf32>
    }
  }
  func.return
}

// A trip count of 1 (a batch of one) is skipped: the loop inside it is marked.
// CHECK-LABEL: func.func @batch_of_one
// CHECK:         scf.for %n
// CHECK:           scf.for %i
// CHECK:           } {byoc.parallel, byoc.chunks = 6 : i64}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @batch_of_one(%a: memref<1x256x256xf32>, %b: memref<1x256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %n = %c0 to %c1 step %c1 {
    scf.for %i = %c0 to %c256 step %c1 {
      scf.for %j = %c0 to %c256 step %c1 {
        %x = memref.load %a[%n, %i, %j] : memref<1x256x256xf32>
        memref.store %x, %b[%n, %i, %j] : memref<1x256x256xf32>
      }
    }
  }
  func.return
}

// A reduction into the outer loop's own slice is independent (sum of rows).
// CHECK-LABEL: func.func @row_sums
// CHECK:         } {byoc.parallel, byoc.chunks = 10 : i64}
func.func @row_sums(%a: memref<256x256xf32>, %s: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    memref.store %zero, %s[%i] : memref<256xf32>
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %a[%i, %j] : memref<256x256xf32>
      %acc = memref.load %s[%i] : memref<256xf32>
      %y = arith.addf %acc, %x : f32
      memref.store %y, %s[%i] : memref<256xf32>
    }
  }
  func.return
}

// Sums of columns with the reduction outside: iterations of %j-outer write
// every element of %s, so the outer loop is not marked; nor is the inner loop,
// too small on its own.
// CHECK-LABEL: func.func @column_sums
// CHECK-NOT:     byoc.parallel
// CHECK:         func.return
func.func @column_sums(%a: memref<256x256xf32>, %s: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %a[%i, %j] : memref<256x256xf32>
      %acc = memref.load %s[%j] : memref<256xf32>
      %y = arith.addf %acc, %x : f32
      memref.store %y, %s[%j] : memref<256xf32>
    }
  }
  func.return
}

// A scalar accumulator shared by every iteration, and a read of a neighbour's
// slice, are races: neither loop is marked.
// CHECK-LABEL: func.func @shared_scalar
// CHECK-NOT:     byoc.parallel
// CHECK:         func.return
func.func @shared_scalar(%a: memref<256x256xf32>, %b: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %acc = memref.alloca() : memref<f32>
  scf.for %i = %c0 to %c256 step %c1 {
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %a[%i, %j] : memref<256x256xf32>
      memref.store %x, %acc[] : memref<f32>
      %y = memref.load %acc[] : memref<f32>
      memref.store %y, %b[%i, %j] : memref<256x256xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @neighbour
// CHECK-NOT:     byoc.parallel
// CHECK:         func.return
func.func @neighbour(%b: memref<257x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    %next = arith.addi %i, %c1 : index
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %b[%i, %j] : memref<257x256xf32>
      memref.store %x, %b[%next, %j] : memref<257x256xf32>
    }
  }
  func.return
}

// Inner loops with bounds known only at run time stay sequential (GCC
// optimises outlined parallel bodies of such nests poorly).
// CHECK-LABEL: func.func @runtime_bounds
// CHECK-NOT:     byoc.parallel
// CHECK:         func.return
func.func @runtime_bounds(%a: memref<256x256xf32>, %b: memref<256x256xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %x = memref.load %a[%i, %j] : memref<256x256xf32>
      memref.store %x, %b[%i, %j] : memref<256x256xf32>
    }
  }
  func.return
}

// Work for fewer than two chunks (here 128 x 129 x 3 ops, 1.5 chunks) stays
// sequential: a fork and join would cost about what the loop does.
// CHECK-LABEL: func.func @under_two_chunks
// CHECK-NOT:     byoc.parallel
// CHECK:         func.return
func.func @under_two_chunks(%a: memref<128x128xf32>, %b: memref<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c128 step %c1 {
    scf.for %j = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %j] : memref<128x128xf32>
      memref.store %x, %b[%i, %j] : memref<128x128xf32>
    }
  }
  func.return
}

// A long loop of little work has fewer chunks than trips.
// CHECK-LABEL: func.func @few_chunks
// CHECK:         } {byoc.parallel, byoc.chunks = 3 : i64}
func.func @few_chunks(%a: memref<1024x32xf32>, %b: memref<1024x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c1024 = arith.constant 1024 : index
  scf.for %i = %c0 to %c1024 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %x = memref.load %a[%i, %j] : memref<1024x32xf32>
      memref.store %x, %b[%i, %j] : memref<1024x32xf32>
    }
  }
  func.return
}
