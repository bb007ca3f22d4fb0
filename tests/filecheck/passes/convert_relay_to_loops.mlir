// RUN: byoc-opt %s -p convert-relay-to-loops | filecheck %s
// RUN: byoc-opt %s -p convert-relay-to-loops,convert-relay-to-loops | filecheck %s

// Same shapes: one loop per dim, the last one innermost; the result is computed
// straight into the output buffer; status 0.
func.func @add(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %0 : tensor<10x10xf32>
}

// CHECK-LABEL:  func.func @add(%a: memref<10x10xf32>, %b: memref<10x10xf32>, %out0: memref<10x10xf32>) -> i32 {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c10 = arith.constant 10 : index
// CHECK-NEXT:     %c0_i32 = arith.constant 0 : i32
// CHECK-NEXT:     scf.for %i0 = %c0 to %c10 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c10 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %a[%i0, %i1] : memref<10x10xf32>
// CHECK-NEXT:         %[[B:.*]] = memref.load %b[%i0, %i1] : memref<10x10xf32>
// CHECK-NEXT:         %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:         memref.store %[[S]], %out0[%i0, %i1] : memref<10x10xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32
// CHECK-NEXT:   }

// A missing leading dim drops the index.
func.func @broadcast_row(%a: tensor<10x10xf32>, %b: tensor<10xf32>) -> tensor<10x10xf32> {
  %0 = relay.subtract %a, %b : (tensor<10x10xf32>, tensor<10xf32>) -> tensor<10x10xf32>
  func.return %0 : tensor<10x10xf32>
}

// CHECK-LABEL:  func.func @broadcast_row(%a: memref<10x10xf32>, %b: memref<10xf32>, %out0: memref<10x10xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c10 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c10 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %a[%i0, %i1] : memref<10x10xf32>
// CHECK-NEXT:         %[[B:.*]] = memref.load %b[%i1] : memref<10xf32>
// CHECK-NEXT:         %[[S:.*]] = arith.subf %[[A]], %[[B]] : f32
// CHECK-NEXT:         memref.store %[[S]], %out0[%i0, %i1] : memref<10x10xf32>

// A size-1 dim reads index 0.
func.func @broadcast_outer(%a: tensor<1x10xf32>, %b: tensor<10x1xf32>) -> tensor<10x10xf32> {
  %0 = relay.multiply %a, %b : (tensor<1x10xf32>, tensor<10x1xf32>) -> tensor<10x10xf32>
  func.return %0 : tensor<10x10xf32>
}

// CHECK-LABEL:  func.func @broadcast_outer(%a: memref<1x10xf32>, %b: memref<10x1xf32>, %out0: memref<10x10xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c10 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c10 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %a[%c0, %i1] : memref<1x10xf32>
// CHECK-NEXT:         %[[B:.*]] = memref.load %b[%i0, %c0] : memref<10x1xf32>
// CHECK-NEXT:         %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:         memref.store %[[P]], %out0[%i0, %i1] : memref<10x10xf32>

// A chain of same-shape elementwise ops, each used once, is fused: one loop
// nest, no intermediate buffer; constants are hoisted to the entry, once each.
// (Buffers of unfused intermediates: @two_users, @calls and fusion.mlir.)
func.func @unary_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.nn.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.negative %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.tanh %1 : (tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.log %2 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// CHECK-LABEL:  func.func @unary_chain(%x: memref<4xf32>, %out0: memref<4xf32>) -> i32 {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c4 = arith.constant 4 : index
// CHECK-NEXT:     %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %c0_i32 = arith.constant 0 : i32
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:       %[[X:.*]] = memref.load %x[%[[I]]] : memref<4xf32>
// CHECK-NEXT:       %[[R:.*]] = arith.maximumf %[[X]], %cst : f32
// CHECK-NEXT:       %[[N:.*]] = arith.negf %[[R]] : f32
// CHECK-NEXT:       %[[T:.*]] = math.tanh %[[N]] : f32
// CHECK-NEXT:       %[[E:.*]] = math.log %[[T]] : f32
// CHECK-NEXT:       memref.store %[[E]], %out0[%[[I]]] : memref<4xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32
// CHECK-NEXT:   }

// A returned argument is copied into its output buffer.
func.func @returns_argument(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = relay.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %x, %0 : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL:  func.func @returns_argument(%x: memref<2x3xf32>, %out0: memref<2x3xf32>, %out1: memref<2x3xf32>) -> i32 {
// CHECK-NOT:      memref.alloc
// CHECK:          scf.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:         %[[X:.*]] = memref.load %x[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:         %[[Y:.*]] = math.log %[[X]] : f32
// CHECK-NEXT:         memref.store %[[Y]], %out1[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:         %[[X:.*]] = memref.load %x[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:         memref.store %[[X]], %out0[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// A value returned twice is computed into the first output, then copied.
func.func @returns_twice(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = relay.divide %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %0 : tensor<3xf32>, tensor<3xf32>
}

// CHECK-LABEL:  func.func @returns_twice(%x: memref<3xf32>, %y: memref<3xf32>, %out0: memref<3xf32>, %out1: memref<3xf32>) -> i32 {
// CHECK-NOT:      memref.alloc
// CHECK:          scf.for %[[I:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:       %[[X:.*]] = memref.load %x[%[[I]]] : memref<3xf32>
// CHECK-NEXT:       %[[Y:.*]] = memref.load %y[%[[I]]] : memref<3xf32>
// CHECK-NEXT:       %[[Q:.*]] = arith.divf %[[X]], %[[Y]] : f32
// CHECK-NEXT:       memref.store %[[Q]], %out0[%[[I]]] : memref<3xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:       %[[V:.*]] = memref.load %out0[%[[I]]] : memref<3xf32>
// CHECK-NEXT:       memref.store %[[V]], %out1[%[[I]]] : memref<3xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// A value with two users is not fused and is freed after the second; the
// single-use tanh is fused into the add that reads it.
func.func @two_users(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = relay.nn.relu %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = relay.tanh %0 : (tensor<3xf32>) -> tensor<3xf32>
  %2 = relay.add %1, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %2 : tensor<3xf32>
}

// CHECK-LABEL:  func.func @two_users(%x: memref<3xf32>, %out0: memref<3xf32>) -> i32 {
// CHECK:          %[[R:.*]] = memref.alloc() : memref<3xf32>
// CHECK-NEXT:     scf.for
// CHECK-NOT:      memref.alloc
// CHECK-NOT:      memref.dealloc
// CHECK:          scf.for %[[I:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:       %[[A:.*]] = memref.load %[[R]][%[[I]]] : memref<3xf32>
// CHECK-NEXT:       %[[T:.*]] = math.tanh %[[A]] : f32
// CHECK-NEXT:       %[[S:.*]] = arith.addf %[[T]], %[[A]] : f32
// CHECK-NEXT:       memref.store %[[S]], %out0[%[[I]]] : memref<3xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     memref.dealloc %[[R]] : memref<3xf32>
// CHECK-NEXT:     func.return %c0_i32 : i32

// Calls are destination-passing: a returned call result is written straight
// into the output buffer; statuses are or-ed and returned. Declarations are
// converted the same way and keep their attributes.
func.func private @ccompiler_0(tensor<2x2xf32>) -> tensor<2x2xf32> attributes {extern.compiler = "ccompiler"}

// CHECK-LABEL:  func.func private @ccompiler_0(memref<2x2xf32>, memref<2x2xf32>) -> i32 attributes {extern.compiler = "ccompiler"}

func.func @calls(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = extern.call @ccompiler_0(%x) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = relay.nn.relu %0 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %2 = extern.call @ccompiler_0(%1) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %2 : tensor<2x2xf32>
}

// CHECK-LABEL:  func.func @calls(%x: memref<2x2xf32>, %out0: memref<2x2xf32>) -> i32 {
// CHECK-NOT:      arith.constant 0 : i32
// CHECK:          %[[C0:.*]] = memref.alloc() : memref<2x2xf32>
// CHECK-NEXT:     %[[S0:.*]] = func.call @ccompiler_0(%x, %[[C0]]) : (memref<2x2xf32>, memref<2x2xf32>) -> i32
// CHECK-NEXT:     %[[R:.*]] = memref.alloc() : memref<2x2xf32>
// CHECK-NEXT:     scf.for
// CHECK:          %[[S1:.*]] = func.call @ccompiler_0(%[[R]], %out0) : (memref<2x2xf32>, memref<2x2xf32>) -> i32
// CHECK-NEXT:     %[[S:.*]] = arith.ori %[[S0]], %[[S1]] : i32
// CHECK-NEXT:     memref.dealloc %[[C0]] : memref<2x2xf32>
// CHECK-NEXT:     memref.dealloc %[[R]] : memref<2x2xf32>
// CHECK-NEXT:     func.return %[[S]] : i32
// CHECK-NEXT:   }

// Rank 0: memref<f32>, no loops.
func.func @rank0(%x: tensor<f32>, %y: tensor<f32>) -> tensor<f32> {
  %0 = relay.add %x, %y : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL:  func.func @rank0(%x: memref<f32>, %y: memref<f32>, %out0: memref<f32>) -> i32 {
// CHECK-NEXT:     %c0_i32 = arith.constant 0 : i32
// CHECK-NEXT:     %[[X:.*]] = memref.load %x[] : memref<f32>
// CHECK-NEXT:     %[[Y:.*]] = memref.load %y[] : memref<f32>
// CHECK-NEXT:     %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:     memref.store %[[S]], %out0[] : memref<f32>
// CHECK-NEXT:     func.return %c0_i32 : i32
// CHECK-NEXT:   }

// A declaration: inputs, then one output per result, then the status.
func.func private @kernel(tensor<2x3xf32>, tensor<f32>) -> (tensor<2x3xf32>, tensor<4xf32>)

// CHECK-LABEL:  func.func private @kernel(memref<2x3xf32>, memref<f32>, memref<2x3xf32>, memref<4xf32>) -> i32
// CHECK-NOT:      tensor

// Integer maximum and minimum compare and select, unsigned for ui8 and i1 (a
// bool's true is 1, not -1); a bool max reduction starts at false.
func.func @integer_extremes(%x: tensor<ui8>, %y: tensor<ui8>, %a: tensor<i32>, %b: tensor<i32>, %g: tensor<2xi1>) -> (tensor<ui8>, tensor<i32>, tensor<i1>) {
  %0 = relay.maximum %x, %y : (tensor<ui8>, tensor<ui8>) -> tensor<ui8>
  %1 = relay.minimum %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %2 = relay.max %g : (tensor<2xi1>) -> tensor<i1>
  func.return %0, %1, %2 : tensor<ui8>, tensor<i32>, tensor<i1>
}

// CHECK-LABEL:  func.func @integer_extremes(
// CHECK:          %[[FALSE:.*]] = arith.constant false
// CHECK:          %[[X:.*]] = memref.load %x[] : memref<ui8>
// CHECK-NEXT:     %[[Y:.*]] = memref.load %y[] : memref<ui8>
// CHECK-NEXT:     %[[C:.*]] = arith.cmpi ugt, %[[X]], %[[Y]] : ui8
// CHECK-NEXT:     %[[M:.*]] = arith.select %[[C]], %[[X]], %[[Y]] : ui8
// CHECK-NEXT:     memref.store %[[M]], %out0[] : memref<ui8>
// CHECK:          %[[A:.*]] = memref.load %a[] : memref<i32>
// CHECK-NEXT:     %[[B:.*]] = memref.load %b[] : memref<i32>
// CHECK-NEXT:     %[[D:.*]] = arith.cmpi slt, %[[A]], %[[B]] : i32
// CHECK-NEXT:     %[[N:.*]] = arith.select %[[D]], %[[A]], %[[B]] : i32
// CHECK-NEXT:     memref.store %[[N]], %out1[] : memref<i32>
// CHECK:          memref.store %[[FALSE]], %out2[] : memref<i1>
// CHECK:          scf.for
// CHECK:            %[[G:.*]] = memref.load %g[
// CHECK-NEXT:       %[[O:.*]] = memref.load %out2[] : memref<i1>
// CHECK-NEXT:       %[[E:.*]] = arith.cmpi ugt, %[[O]], %[[G]] : i1
// CHECK-NEXT:       %[[S:.*]] = arith.select %[[E]], %[[O]], %[[G]] : i1
// CHECK-NEXT:       memref.store %[[S]], %out2[] : memref<i1>

// Comparisons give i1: arith.cmpf on floats (ordered, but `une` for
// not_equal, true on NaN as numpy's !=), arith.cmpi on integers, signed or
// unsigned by the element type (i1 compares unsigned: false < true); logic is
// bitwise on i1 (not: xor with true). Integer arithmetic is marked to wrap.
func.func @compare_and_logic(%a: tensor<4xi32>, %b: tensor<4xi32>, %u: tensor<4xui8>, %x: tensor<4xf32>, %y: tensor<4xf32>, %p: tensor<4xi1>) -> (tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = relay.multiply %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = relay.not_equal %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %2 = relay.less_equal %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %3 = relay.logical_not %2 : (tensor<4xi1>) -> tensor<4xi1>
  %4 = relay.logical_or %1, %3 : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %5 = relay.greater %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %6 = relay.less %p, %p : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %7 = relay.equal %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %8 = relay.logical_xor %6, %7 : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %0, %4, %2, %5, %8 : tensor<4xi32>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// CHECK-LABEL:  func.func @compare_and_logic(
// CHECK:          arith.muli %{{.*}}, %{{.*}} {byoc.wraps} : i32
// CHECK:          arith.cmpi sle, %{{.*}}, %{{.*}} : i32
// CHECK:          arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:     %[[P:.*]] = memref.load %out2
// CHECK-NEXT:     %[[N:.*]] = arith.xori %[[P]], %c1_i1 : i1
// CHECK-NEXT:     arith.ori %{{.*}}, %[[N]] : i1
// CHECK:          arith.cmpi ugt, %{{.*}}, %{{.*}} : ui8
// CHECK:          arith.cmpi ult, %{{.*}}, %{{.*}} : i1
// CHECK:          arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:     arith.xori %{{.*}}, %{{.*}} : i1

// Remainders and shifts define a result for every operand, where LLVM and C
// trap or are undefined: an integer divisor of 0 or -1 becomes 1 (x % 0 is 0,
// INT_MIN % -1 never runs), a floored remainder moves by the divisor when its
// sign differs; a shift amount out of [0, width) (one unsigned compare) gives
// width - 1 to an arithmetic right shift and 0 to the others. arith.remf is
// byoc's addition to xDSL's arith.
func.func @remainders_and_shifts(%a: tensor<4xi32>, %b: tensor<4xi32>, %x: tensor<4xf32>, %y: tensor<4xf32>, %s: tensor<4xi8>, %n: tensor<4xi8>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xi8>, tensor<4xi8>) {
  %0 = relay.floor_mod %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = relay.mod %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.right_shift %s, %n : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %3 = relay.left_shift %s, %n : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  func.return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xf32>, tensor<4xi8>, tensor<4xi8>
}

// CHECK-LABEL:  func.func @remainders_and_shifts(
// CHECK:          %[[A:.*]] = memref.load %a[
// CHECK-NEXT:     %[[B:.*]] = memref.load %b[
// CHECK-NEXT:     %[[Z:.*]] = arith.cmpi eq, %[[B]], %c0_i32 : i32
// CHECK-NEXT:     %[[M:.*]] = arith.cmpi eq, %[[B]], %cm1_i32 : i32
// CHECK-NEXT:     %[[RISKY:.*]] = arith.ori %[[Z]], %[[M]] : i1
// CHECK-NEXT:     %[[D:.*]] = arith.select %[[RISKY]], %c1_i32, %[[B]] : i32
// CHECK-NEXT:     %[[R:.*]] = arith.remsi %[[A]], %[[D]] : i32
// CHECK:          %[[MOVED:.*]] = arith.addi %[[R]], %[[D]] {byoc.wraps} : i32
// CHECK-NEXT:     %[[F:.*]] = arith.select %{{.*}}, %[[MOVED]], %[[R]] : i32
// CHECK-NEXT:     memref.store %[[F]], %out0[
// CHECK:          arith.remf %{{.*}}, %{{.*}} : f32
// CHECK:          %[[IN:.*]] = arith.cmpi ult, %[[N:.*]], %c8_i8 : i8
// CHECK-NEXT:     %[[AMOUNT:.*]] = arith.select %[[IN]], %[[N]], %c7_i8 : i8
// CHECK-NEXT:     arith.shrsi %{{.*}}, %[[AMOUNT]] : i8
// CHECK:          %[[IN2:.*]] = arith.cmpi ult, %[[N2:.*]], %c8_i8 : i8
// CHECK-NEXT:     %[[AMOUNT2:.*]] = arith.select %[[IN2]], %[[N2]], %c0_i8 : i8
// CHECK-NEXT:     %[[SHL:.*]] = arith.shli %{{.*}}, %[[AMOUNT2]] : i8
// CHECK-NEXT:     arith.select %[[IN2]], %[[SHL]], %c0_i8 : i8
