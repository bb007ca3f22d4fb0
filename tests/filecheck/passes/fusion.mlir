// RUN: byoc-opt %s -p convert-relay-to-loops | filecheck %s

// Elementwise fusion in convert-relay-to-loops: an elementwise op whose result
// has one use, by an elementwise op of the same result shape, and is not
// returned, is computed inline in its consumer's loop nest (no buffer).

// add -> multiply -> subtract: one loop nest, no intermediate buffer.
func.func @chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = relay.multiply %0, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = relay.subtract %1, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// CHECK-LABEL:  func.func @chain(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>, %d: memref<4x8xf32>, %out0: memref<4x8xf32>) -> i32 {
// CHECK-NOT:      memref.alloc
// CHECK:          scf.for %i0 = %c0 to %c4 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c8 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %a[%i0, %i1] : memref<4x8xf32>
// CHECK-NEXT:         %[[B:.*]] = memref.load %b[%i0, %i1] : memref<4x8xf32>
// CHECK-NEXT:         %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:         %[[C:.*]] = memref.load %c[%i0, %i1] : memref<4x8xf32>
// CHECK-NEXT:         %[[P:.*]] = arith.mulf %[[S]], %[[C]] : f32
// CHECK-NEXT:         %[[D:.*]] = memref.load %d[%i0, %i1] : memref<4x8xf32>
// CHECK-NEXT:         %[[Y:.*]] = arith.subf %[[P]], %[[D]] : f32
// CHECK-NEXT:         memref.store %[[Y]], %out0[%i0, %i1] : memref<4x8xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NOT:      memref.dealloc
// CHECK-NEXT:     func.return %c0_i32 : i32
// CHECK-NEXT:   }

// A broadcast producer (its shape differs from its consumer's result) keeps
// its buffer; the ops after it are still fused together.
func.func @broadcast(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = relay.multiply %0, %c : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = relay.log %1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// CHECK-LABEL:  func.func @broadcast(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<4x8xf32>, %out0: memref<4x8xf32>) -> i32 {
// CHECK:          %[[T:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:       %[[A:.*]] = memref.load %a[%[[I]]] : memref<8xf32>
// CHECK-NEXT:       %[[B:.*]] = memref.load %b[%[[I]]] : memref<8xf32>
// CHECK-NEXT:       %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:       memref.store %[[S]], %[[T]][%[[I]]] : memref<8xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:         %[[X:.*]] = memref.load %[[T]][%[[J]]] : memref<8xf32>
// CHECK-NEXT:         %[[C:.*]] = memref.load %c[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:         %[[P:.*]] = arith.mulf %[[X]], %[[C]] : f32
// CHECK-NEXT:         %[[E:.*]] = math.log %[[P]] : f32
// CHECK-NEXT:         memref.store %[[E]], %out0[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     memref.dealloc %[[T]] : memref<8xf32>
// CHECK-NEXT:     func.return %c0_i32 : i32

// A value used twice (a diamond) keeps its buffer; each single-use branch is
// fused into the op that joins them.
func.func @diamond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.log %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.negative %0 : (tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.add %1, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// CHECK-LABEL:  func.func @diamond(%x: memref<4xf32>, %out0: memref<4xf32>) -> i32 {
// CHECK:          %[[E:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:     scf.for
// CHECK-NEXT:       memref.load %x
// CHECK-NEXT:       math.log
// CHECK-NEXT:       memref.store
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:       %[[V:.*]] = memref.load %[[E]][%[[I]]] : memref<4xf32>
// CHECK-NEXT:       %[[T:.*]] = math.tanh %[[V]] : f32
// CHECK-NEXT:       %[[N:.*]] = arith.negf %[[V]] : f32
// CHECK-NEXT:       %[[S:.*]] = arith.addf %[[T]], %[[N]] : f32
// CHECK-NEXT:       memref.store %[[S]], %out0[%[[I]]] : memref<4xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     memref.dealloc %[[E]] : memref<4xf32>
// CHECK-NEXT:     func.return %c0_i32 : i32

// A returned intermediate is computed into its output, not fused.
func.func @returned(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.log %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.negative %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL:  func.func @returned(%x: memref<4xf32>, %out0: memref<4xf32>, %out1: memref<4xf32>) -> i32 {
// CHECK-NOT:      memref.alloc
// CHECK:            math.log
// CHECK-NEXT:       memref.store %{{.*}}, %out0
// CHECK:            %[[V:.*]] = memref.load %out0
// CHECK-NEXT:       arith.negf %[[V]]
// CHECK-NEXT:       memref.store %{{.*}}, %out1

// Activations with attributes fuse like any elementwise op; round (and floor,
// ceil) is arithmetic only, adding and subtracting 2**23 where |x| < 2**23, so
// its C needs no libm; selects keep a NaN input (ordered compares are false).
func.func @activations(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = relay.add %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = relay.round %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = relay.nn.leaky_relu %1 {alpha = 2.500000e-01 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %2 : tensor<8xf32>
}

// CHECK-LABEL:  func.func @activations(%a: memref<8xf32>, %b: memref<8xf32>, %out0: memref<8xf32>) -> i32 {
// CHECK-DAG:      %[[MAGIC:.*]] = arith.constant 0x4B000000 : f32
// CHECK-DAG:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:      %[[ALPHA:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NOT:      memref.alloc
// CHECK:          scf.for %i0 = %c0 to %c8 step %c1 {
// CHECK-NEXT:       %[[A:.*]] = memref.load %a[%i0] : memref<8xf32>
// CHECK-NEXT:       %[[B:.*]] = memref.load %b[%i0] : memref<8xf32>
// CHECK-NEXT:       %[[X:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:       %[[ABS:.*]] = math.absf %[[X]] : f32
// CHECK-NEXT:       %[[UP:.*]] = arith.addf %[[ABS]], %[[MAGIC]] : f32
// CHECK-NEXT:       %[[DOWN:.*]] = arith.subf %[[UP]], %[[MAGIC]] : f32
// CHECK-NEXT:       %[[SMALL:.*]] = arith.cmpf olt, %[[ABS]], %[[MAGIC]] : f32
// CHECK-NEXT:       %[[R:.*]] = arith.select %[[SMALL]], %[[DOWN]], %[[ABS]] : f32
// CHECK-NEXT:       %[[NEG:.*]] = arith.negf %[[R]] : f32
// CHECK-NEXT:       %[[BELOW:.*]] = arith.cmpf olt, %[[X]], %[[ZERO]] : f32
// CHECK-NEXT:       %[[ROUNDED:.*]] = arith.select %[[BELOW]], %[[NEG]], %[[R]] : f32
// CHECK-NEXT:       %[[SCALED:.*]] = arith.mulf %[[ROUNDED]], %[[ALPHA]] : f32
// CHECK-NEXT:       %[[LEAKY:.*]] = arith.cmpf olt, %[[ROUNDED]], %[[ZERO]] : f32
// CHECK-NEXT:       %[[Y:.*]] = arith.select %[[LEAKY]], %[[SCALED]], %[[ROUNDED]] : f32
// CHECK-NEXT:       memref.store %[[Y]], %out0[%i0] : memref<8xf32>
// CHECK-NEXT:     }
