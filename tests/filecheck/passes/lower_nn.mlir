// RUN: byoc-opt %s -p convert-relay-to-loops | filecheck %s

// dense: one dot product per output, both operands read along contiguous k;
// a long k is split into 16 interleaved partial sums (an alloca at the entry),
// the 8 left over go to lanes 0..7, and the lanes are added into the output.
func.func @dense(%x: tensor<2x40xf32>, %w: tensor<3x40xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<2x40xf32>, tensor<3x40xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL:  func.func @dense(%x: memref<2x40xf32>, %w: memref<3x40xf32>, %out0: memref<2x3xf32>) -> i32 {
// CHECK-NEXT:     %partial = memref.alloca() : memref<16xf32>
// CHECK:          scf.for %m0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %n = %c0 to %c3 step %c1 {
// CHECK-NEXT:         memref.store %cst, %out0[%m0, %n] : memref<2x3xf32>
// CHECK-NEXT:         scf.for %lane = %c0 to %c16 step %c1 {
// CHECK-NEXT:           memref.store %cst, %partial[%lane] : memref<16xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %kc = %c0 to %c2 step %c1 {
// CHECK-NEXT:           scf.for %[[LANE:.*]] = %c0 to %c16 step %c1 {
// CHECK-NEXT:             %[[KC:.*]] = arith.muli %kc, %c16 : index
// CHECK-NEXT:             %[[K:.*]] = arith.addi %[[KC]], %[[LANE]] : index
// CHECK-NEXT:             %[[A:.*]] = memref.load %x[%m0, %[[K]]] : memref<2x40xf32>
// CHECK-NEXT:             %[[B:.*]] = memref.load %w[%n, %[[K]]] : memref<3x40xf32>
// CHECK-NEXT:             %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:             %[[S:.*]] = memref.load %partial[%[[LANE]]] : memref<16xf32>
// CHECK-NEXT:             %[[T:.*]] = arith.addf %[[S]], %[[P]] : f32
// CHECK-NEXT:             memref.store %[[T]], %partial[%[[LANE]]] : memref<16xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %k = %c32 to %c40 step %c1 {
// CHECK-NEXT:           %[[LANE:.*]] = arith.addi %k, %cm32 : index
// CHECK:                memref.store %{{.*}}, %partial[%[[LANE]]] : memref<16xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %[[LANE:.*]] = %c0 to %c16 step %c1 {
// CHECK-NEXT:           %[[S:.*]] = memref.load %partial[%[[LANE]]] : memref<16xf32>
// CHECK-NEXT:           %[[O:.*]] = memref.load %out0[%m0, %n] : memref<2x3xf32>
// CHECK-NEXT:           %[[T:.*]] = arith.addf %[[O]], %[[S]] : f32
// CHECK-NEXT:           memref.store %[[T]], %out0[%m0, %n] : memref<2x3xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %c0_i32 : i32

// A short dot product is one running sum, straight in the output.
func.func @dense_short(%x: tensor<4xf32>, %w: tensor<3x4xf32>) -> tensor<3xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// CHECK-LABEL:  func.func @dense_short(%x: memref<4xf32>, %w: memref<3x4xf32>, %out0: memref<3xf32>) -> i32 {
// CHECK-NOT:      memref.alloca
// CHECK:          scf.for %n = %c0 to %c3 step %c1 {
// CHECK-NEXT:       memref.store %cst, %out0[%n] : memref<3xf32>
// CHECK-NEXT:       scf.for %k = %c0 to %c4 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %x[%k] : memref<4xf32>
// CHECK-NEXT:         %[[B:.*]] = memref.load %w[%n, %k] : memref<3x4xf32>
// CHECK-NEXT:         %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:         %[[O:.*]] = memref.load %out0[%n] : memref<3xf32>
// CHECK-NEXT:         %[[T:.*]] = arith.addf %[[O]], %[[P]] : f32
// CHECK-NEXT:         memref.store %[[T]], %out0[%n] : memref<3xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }

// matmul with b[k, n]: k outside n, so the innermost loop adds a[m, k] * b[k, :]
// to the output row, unit-stride and without a loop-carried sum.
func.func @matmul(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL:  func.func @matmul(%a: memref<2x4xf32>, %b: memref<4x3xf32>, %out0: memref<2x3xf32>) -> i32 {
// CHECK:          scf.for %m0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %n = %c0 to %c3 step %c1 {
// CHECK-NEXT:         memref.store %cst, %out0[%m0, %n] : memref<2x3xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %k = %c0 to %c4 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %a[%m0, %k] : memref<2x4xf32>
// CHECK-NEXT:         scf.for %[[N:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:           %[[B:.*]] = memref.load %b[%k, %[[N]]] : memref<4x3xf32>
// CHECK-NEXT:           %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:           %[[O:.*]] = memref.load %out0[%m0, %[[N]]] : memref<2x3xf32>
// CHECK-NEXT:           %[[T:.*]] = arith.addf %[[O]], %[[P]] : f32
// CHECK-NEXT:           memref.store %[[T]], %out0[%m0, %[[N]]] : memref<2x3xf32>

// conv2d without padding: each output plane is zeroed, then every (channel,
// tap) adds its weight times a shifted input plane; size-1 dims get no loop.
func.func @conv2d(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = relay.nn.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %0 : tensor<1x4x3x3xf32>
}

// CHECK-LABEL:  func.func @conv2d(%x: memref<1x2x5x5xf32>, %w: memref<4x2x3x3xf32>, %out0: memref<1x4x3x3xf32>) -> i32 {
// CHECK:          scf.for %o = %c0 to %c4 step %c1 {
// CHECK-NEXT:       scf.for %oy = %c0 to %c3 step %c1 {
// CHECK-NEXT:         scf.for %ox = %c0 to %c3 step %c1 {
// CHECK-NEXT:           memref.store %cst, %out0[%c0, %o, %oy, %ox] : memref<1x4x3x3xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %c = %c0 to %c2 step %c1 {
// CHECK-NEXT:         scf.for %ki = %c0 to %c3 step %c1 {
// CHECK-NEXT:           scf.for %kj = %c0 to %c3 step %c1 {
// CHECK-NEXT:             scf.for %[[OY:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:               %[[IY:.*]] = arith.addi %[[OY]], %ki : index
// CHECK-NEXT:               scf.for %[[OX:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:                 %[[IX:.*]] = arith.addi %[[OX]], %kj : index
// CHECK-NEXT:                 %[[X:.*]] = memref.load %x[%c0, %c, %[[IY]], %[[IX]]] : memref<1x2x5x5xf32>
// CHECK-NEXT:                 %[[W:.*]] = memref.load %w[%o, %c, %ki, %kj] : memref<4x2x3x3xf32>
// CHECK-NEXT:                 %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:                 %[[O:.*]] = memref.load %out0[%c0, %o, %[[OY]], %[[OX]]] : memref<1x4x3x3xf32>
// CHECK-NEXT:                 %[[T:.*]] = arith.addf %[[O]], %[[P]] : f32
// CHECK-NEXT:                 memref.store %[[T]], %out0[%c0, %o, %[[OY]], %[[OX]]] : memref<1x4x3x3xf32>

// Depthwise, strided, padded: no branch; each tap clamps its output range to
// the outputs whose input is inside the image,
// [max(0, ceil((pad - tap) / 2)), min(3, ceil((5 + pad - tap) / 2))).
func.func @conv2d_depthwise_padded(%x: tensor<1x4x5x5xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = relay.nn.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 4} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %0 : tensor<1x4x3x3xf32>
}

// CHECK-LABEL:  func.func @conv2d_depthwise_padded(
// CHECK:          scf.for %g = %c0 to %c4 step %c1 {
// CHECK:            scf.for %ki = %c0 to %c3 step %c1 {
// CHECK-NEXT:         %[[MINUS:.*]] = arith.muli %ki, %cm1 : index
// CHECK-NEXT:         %[[NUM:.*]] = arith.addi %[[MINUS]], %c2 : index
// CHECK-NEXT:         %[[DIV:.*]] = arith.divsi %[[NUM]], %c2 : index
// CHECK-NEXT:         %[[CMP:.*]] = arith.cmpi sgt, %c0, %[[DIV]] : index
// CHECK-NEXT:         %[[LO:.*]] = arith.select %[[CMP]], %c0, %[[DIV]] : index
// CHECK-NEXT:         %[[NUM:.*]] = arith.addi %[[MINUS]], %c7 : index
// CHECK-NEXT:         %[[DIV:.*]] = arith.divsi %[[NUM]], %c2 : index
// CHECK-NEXT:         %[[CMP:.*]] = arith.cmpi slt, %c3, %[[DIV]] : index
// CHECK-NEXT:         %[[HI:.*]] = arith.select %[[CMP]], %c3, %[[DIV]] : index
// CHECK-NEXT:         %[[START:.*]] = arith.addi %ki, %cm1 : index
// CHECK-NEXT:         scf.for %kj = %c0 to %c3 step %c1 {
// CHECK:                scf.for %[[OY:.*]] = %[[LO]] to %[[HI]] step %c1 {
// CHECK-NEXT:             %[[Y:.*]] = arith.muli %[[OY]], %c2 : index
// CHECK-NEXT:             %[[IY:.*]] = arith.addi %[[Y]], %[[START]] : index
// CHECK-NEXT:             scf.for %[[OX:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK-NOT:                scf.if
// CHECK:                    memref.load %x[%c0, %g, %[[IY]], %{{.*}}] : memref<1x4x5x5xf32>
// CHECK-NEXT:               memref.load %w[%g, %c0, %ki, %kj] : memref<4x1x3x3xf32>

// softmax along the last axis, one row at a time: the maximum, then
// exp(x - max) (vectorisable arithmetic, passes/vector_math.py) into the
// output and its sum, then one multiply by 1 / sum; the statistics are
// scalars (allocas).
func.func @softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = relay.nn.softmax %x : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// CHECK-LABEL:  func.func @softmax(%x: memref<2x5xf32>, %out0: memref<2x5xf32>) -> i32 {
// CHECK-DAG:      %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-DAG:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:          %max = memref.alloca() : memref<f32>
// CHECK-NEXT:     %sum = memref.alloca() : memref<f32>
// CHECK-NEXT:     scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       memref.store %[[NEG_INF]], %max[] : memref<f32>
// CHECK-NEXT:       memref.store %[[ZERO]], %sum[] : memref<f32>
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:         %[[X:.*]] = memref.load %x[%i0, %[[J]]] : memref<2x5xf32>
// CHECK-NEXT:         %[[M:.*]] = memref.load %max[] : memref<f32>
// CHECK-NEXT:         %[[NEW:.*]] = arith.maximumf %[[M]], %[[X]] : f32
// CHECK-NEXT:         memref.store %[[NEW]], %max[] : memref<f32>
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:         %[[X:.*]] = memref.load %x[%i0, %[[J]]] : memref<2x5xf32>
// CHECK-NEXT:         %[[M:.*]] = memref.load %max[] : memref<f32>
// CHECK-NEXT:         %[[D:.*]] = arith.subf %[[X]], %[[M]] : f32
// CHECK-NOT:          math.exp
// CHECK:              math.floor
// CHECK:              arith.bitcast
// CHECK:              %[[E:.*]] = arith.select %{{.*}}, %[[D]], %{{.*}} : f32
// CHECK-NEXT:         memref.store %[[E]], %out0[%i0, %[[J]]] : memref<2x5xf32>
// CHECK-NEXT:         %[[S:.*]] = memref.load %sum[] : memref<f32>
// CHECK-NEXT:         %[[T:.*]] = arith.addf %[[S]], %[[E]] : f32
// CHECK-NEXT:         memref.store %[[T]], %sum[] : memref<f32>
// CHECK-NEXT:       }
// CHECK-NEXT:       %[[S:.*]] = memref.load %sum[] : memref<f32>
// CHECK-NEXT:       %[[R:.*]] = arith.divf %[[ONE]], %[[S]] : f32
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:         %[[E:.*]] = memref.load %out0[%i0, %[[J]]] : memref<2x5xf32>
// CHECK-NEXT:         %[[Y:.*]] = arith.mulf %[[E]], %[[R]] : f32
// CHECK-NEXT:         memref.store %[[Y]], %out0[%i0, %[[J]]] : memref<2x5xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return

// A long row (32 or more): the sums keep 16 partial sums, one per lane
// (k mod 16), in an alloca at the entry, added up after the whole chunks and
// the tail; the loop over the lanes vectorises. layer_norm: the mean, the
// variance, then one pass of (x - mean) * (1 / sqrt(var + eps)) * gamma + beta.
func.func @layer_norm_long(%x: tensor<3x40xf32>, %g: tensor<40xf32>, %b: tensor<40xf32>) -> tensor<3x40xf32> {
  %0 = relay.nn.layer_norm %x, %g, %b : (tensor<3x40xf32>, tensor<40xf32>, tensor<40xf32>) -> tensor<3x40xf32>
  func.return %0 : tensor<3x40xf32>
}

// CHECK-LABEL:  func.func @layer_norm_long(
// CHECK:          memref.alloca() : memref<16xf32>
// CHECK:          %mean = memref.alloca() : memref<f32>
// CHECK-NEXT:     %var = memref.alloca() : memref<f32>
// CHECK-NEXT:     scf.for %i0 = %c0 to %c3 step %c1 {
// CHECK:            scf.for %kc = %c0 to %c2 step %c1 {
// CHECK-NEXT:         scf.for %[[L:.*]] = %c0 to %c16 step %c1 {
// CHECK:                memref.load %x[%i0, %{{.*}}] : memref<3x40xf32>
// CHECK:                arith.addf
// CHECK-NEXT:           memref.store %{{.*}}, %partial{{.*}}[%[[L]]] : memref<16xf32>
// CHECK:            scf.for %k = %c32 to %c40 step %c1 {
// CHECK:            memref.load %mean[] : memref<f32>
// CHECK:            arith.divf
// CHECK:            math.sqrt
// CHECK:            scf.for %[[K:.*]] = %c0 to %c40 step %c1 {
// CHECK:              arith.subf
// CHECK-NEXT:         arith.mulf
// CHECK-NEXT:         %[[G:.*]] = memref.load %g[%[[K]]] : memref<40xf32>
// CHECK-NEXT:         arith.mulf %{{.*}}, %[[G]] : f32
// CHECK-NEXT:         %[[B:.*]] = memref.load %b[%[[K]]] : memref<40xf32>
// CHECK-NEXT:         arith.addf %{{.*}}, %[[B]] : f32
// CHECK-NEXT:         memref.store

// Along an inner axis the statistics are rows on the heap, so every loop is
// contiguous; they are freed at the end.
func.func @log_softmax_axis0(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = relay.nn.log_softmax %x {axis = 0} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// CHECK-LABEL:  func.func @log_softmax_axis0(%x: memref<3x4xf32>, %out0: memref<3x4xf32>) -> i32 {
// CHECK:          %max = memref.alloc() : memref<4xf32>
// CHECK-NEXT:     %sum = memref.alloc() : memref<4xf32>
// CHECK:            memref.load %x[%{{.*}}, %[[J:.*]]] : memref<3x4xf32>
// CHECK-NEXT:       memref.load %max[%[[J]]] : memref<4xf32>
// CHECK-NEXT:       arith.maximumf
// CHECK:          math.log
// CHECK:          arith.subf
// CHECK:          memref.dealloc %max : memref<4xf32>
// CHECK-NEXT:     memref.dealloc %sum : memref<4xf32>
// CHECK-NEXT:     func.return

// sum over a middle axis: the output is zeroed, then the input is walked in
// order, adding into the output at its kept indices (keepdims: index 0).
func.func @sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = relay.sum %x {axis = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  func.return %0 : tensor<2x1x4xf32>
}

// CHECK-LABEL:  func.func @sum_keepdims(%x: memref<2x3x4xf32>, %out0: memref<2x1x4xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %i2 = %c0 to %c4 step %c1 {
// CHECK-NEXT:         memref.store %cst, %out0[%i0, %c0, %i2] : memref<2x1x4xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %[[J:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:         scf.for %[[K:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:           %[[X:.*]] = memref.load %x[%[[I]], %[[J]], %[[K]]] : memref<2x3x4xf32>
// CHECK-NEXT:           %[[O:.*]] = memref.load %out0[%[[I]], %c0, %[[K]]] : memref<2x1x4xf32>
// CHECK-NEXT:           %[[T:.*]] = arith.addf %[[O]], %[[X]] : f32
// CHECK-NEXT:           memref.store %[[T]], %out0[%[[I]], %c0, %[[K]]] : memref<2x1x4xf32>

// mean of everything: a rank-0 output, summed then divided by the count.
func.func @mean_all(%x: tensor<2x3xf32>) -> tensor<f32> {
  %0 = relay.mean %x : (tensor<2x3xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// CHECK-LABEL:  func.func @mean_all(%x: memref<2x3xf32>, %out0: memref<f32>) -> i32 {
// CHECK:          %[[COUNT:.*]] = arith.constant 6.000000e+00 : f32
// CHECK:          memref.store %cst, %out0[] : memref<f32>
// CHECK-NEXT:     scf.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %[[K:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:         %[[X:.*]] = memref.load %x[%[[I]], %[[K]]] : memref<2x3xf32>
// CHECK-NEXT:         %[[O:.*]] = memref.load %out0[] : memref<f32>
// CHECK-NEXT:         %[[T:.*]] = arith.addf %[[O]], %[[X]] : f32
// CHECK-NEXT:         memref.store %[[T]], %out0[] : memref<f32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     %[[S:.*]] = memref.load %out0[] : memref<f32>
// CHECK-NEXT:     %[[M:.*]] = arith.divf %[[S]], %[[COUNT]] : f32
// CHECK-NEXT:     memref.store %[[M]], %out0[] : memref<f32>
// CHECK-NEXT:     func.return

// max along the last axis starts from -inf (NaN-propagating maximumf).
func.func @max_last(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.max %x {axis = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// CHECK-LABEL:  func.func @max_last(%x: memref<2x3xf32>, %out0: memref<2xf32>) -> i32 {
// CHECK:          %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK:            memref.store %[[NEG_INF]], %out0[%{{.*}}] : memref<2xf32>
// CHECK:              %[[X:.*]] = memref.load %x[%[[I:.*]], %{{.*}}] : memref<2x3xf32>
// CHECK-NEXT:         %[[O:.*]] = memref.load %out0[%[[I]]] : memref<2xf32>
// CHECK-NEXT:         %[[T:.*]] = arith.maximumf %[[O]], %[[X]] : f32
// CHECK-NEXT:         memref.store %[[T]], %out0[%[[I]]] : memref<2xf32>

// Many rows and a short k: dense's weight is copied transposed once (8x8 tiles,
// then the columns and rows left over), so the output rows accumulate along n.
func.func @dense_many_rows(%x: tensor<64x21xf32>, %w: tensor<13x21xf32>) -> tensor<64x13xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<64x21xf32>, tensor<13x21xf32>) -> tensor<64x13xf32>
  func.return %0 : tensor<64x13xf32>
}

// CHECK-LABEL:  func.func @dense_many_rows(
// CHECK:          %transposed = memref.alloc() : memref<21x13xf32>
// CHECK-NEXT:     scf.for %ct = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %r = %c0 to %c8 step %c1 {
// CHECK-NEXT:         scf.for %c = %c0 to %c8 step %c1 {
// CHECK-NEXT:           %[[C0:.*]] = arith.muli %ct, %c8 : index
// CHECK-NEXT:           %[[C:.*]] = arith.addi %[[C0]], %c : index
// CHECK-NEXT:           %[[W:.*]] = memref.load %w[%r, %[[C]]] : memref<13x21xf32>
// CHECK-NEXT:           memref.store %[[W]], %transposed[%[[C]], %r] : memref<21x13xf32>
// CHECK:          scf.for %[[R:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:       scf.for %[[C:.*]] = %c16 to %c21 step %c1 {
// CHECK:          scf.for %[[R:.*]] = %c8 to %c13 step %c1 {
// CHECK-NEXT:       scf.for %[[C:.*]] = %c0 to %c21 step %c1 {
// CHECK:          scf.for %m0 = %c0 to %c64 step %c1 {
// CHECK:            scf.for %k = %c0 to %c21 step %c1 {
// CHECK-NEXT:         %[[A:.*]] = memref.load %x[%m0, %k] : memref<64x21xf32>
// CHECK-NEXT:         scf.for %[[N:.*]] = %c0 to %c13 step %c1 {
// CHECK-NEXT:           %[[B:.*]] = memref.load %transposed[%k, %[[N]]] : memref<21x13xf32>
// CHECK-NEXT:           %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK:          memref.dealloc %transposed : memref<21x13xf32>
// CHECK-NEXT:     func.return

// lrn: per channel, the squares of its window summed into the output (the
// channel loop clamped to the axis: no padding), then the scaling; the inner
// loops walk the contiguous spatial dims. An even size reaches one further
// after the channel than before it (ONNX's window).
func.func @lrn(%x: tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32> {
  %0 = relay.nn.lrn %x {size = 4 : i64, bias = 1.0 : f32, alpha = 1.0e-4 : f32} : (tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32>
  func.return %0 : tensor<1x6x2x3xf32>
}

// CHECK-LABEL:  func.func @lrn(%x: memref<1x6x2x3xf32>, %out0: memref<1x6x2x3xf32>) -> i32 {
// CHECK-DAG:      %[[ALPHA:.*]] = arith.constant 2.500000e-05 : f32
// CHECK-DAG:      %[[BETA:.*]] = arith.constant 7.500000e-01 : f32
// CHECK:          scf.for %c = %c0 to %c6 step %c1 {
// CHECK:              memref.store %cst, %out0[%c0, %c, %{{.*}}, %{{.*}}]
// CHECK:            %[[BEFORE:.*]] = arith.addi %c, %cm1 : index
// CHECK-NEXT:       %[[LOW:.*]] = arith.cmpi sgt, %c0, %[[BEFORE]] : index
// CHECK-NEXT:       %[[FIRST:.*]] = arith.select %[[LOW]], %c0, %[[BEFORE]] : index
// CHECK-NEXT:       %[[AFTER:.*]] = arith.addi %c, %c3 : index
// CHECK-NEXT:       %[[HIGH:.*]] = arith.cmpi slt, %c6, %[[AFTER]] : index
// CHECK-NEXT:       %[[END:.*]] = arith.select %[[HIGH]], %c6, %[[AFTER]] : index
// CHECK-NEXT:       scf.for %k = %[[FIRST]] to %[[END]] step %c1 {
// CHECK-NEXT:         scf.for %[[J0:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:           scf.for %[[J1:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:             %[[X:.*]] = memref.load %x[%c0, %k, %[[J0]], %[[J1]]]
// CHECK-NEXT:             %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT:             %[[S:.*]] = memref.load %out0[%c0, %c, %[[J0]], %[[J1]]]
// CHECK-NEXT:             %[[T:.*]] = arith.addf %[[S]], %[[SQ]] : f32
// CHECK-NEXT:             memref.store %[[T]], %out0[%c0, %c, %[[J0]], %[[J1]]]
// CHECK:              %[[S:.*]] = memref.load %out0[%c0, %c, %[[J0:.*]], %[[J1:.*]]]
// CHECK-NEXT:         %[[A:.*]] = arith.mulf %[[S]], %[[ALPHA]] : f32
// CHECK-NEXT:         %[[B:.*]] = arith.addf %[[A]], %cst_{{.*}} : f32
// CHECK-NEXT:         %[[P:.*]] = math.powf %[[B]], %[[BETA]] : f32
// CHECK-NEXT:         %[[X:.*]] = memref.load %x[%c0, %c, %[[J0]], %[[J1]]]
// CHECK-NEXT:         %[[Y:.*]] = arith.divf %[[X]], %[[P]] : f32
// CHECK-NEXT:         memref.store %[[Y]], %out0[%c0, %c, %[[J0]], %[[J1]]]

// instance_norm: per instance and channel, the mean and then the variance of
// the other axes (scalars at the entry), folded with gamma and beta into one
// scale and shift, so the output is one multiply-add per element.
func.func @instance_norm(%x: tensor<2x3x4x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  %0 = relay.nn.instance_norm %x, %g, %b : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  func.return %0 : tensor<2x3x4x5xf32>
}

// CHECK-LABEL:  func.func @instance_norm(
// CHECK-DAG:      %[[COUNT:.*]] = arith.constant 2.000000e+01 : f32
// CHECK-DAG:      %var = memref.alloca() : memref<f32>
// CHECK-DAG:      %mean = memref.alloca() : memref<f32>
// CHECK:          scf.for %n = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %c = %c0 to %c3 step %c1 {
// CHECK:                memref.load %x[%n, %c, %{{.*}}, %k]
// CHECK:                memref.store %{{.*}}, %mean[] : memref<f32>
// CHECK:            %[[SUM:.*]] = memref.load %mean[] : memref<f32>
// CHECK-NEXT:       %[[MEAN:.*]] = arith.divf %[[SUM]], %[[COUNT]] : f32
// CHECK:                %[[D:.*]] = arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK-NEXT:           %[[D2:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK:            math.sqrt
// CHECK:            %[[GAMMA:.*]] = memref.load %g[%c] : memref<3xf32>
// CHECK-NEXT:       %[[SCALE:.*]] = arith.mulf %{{.*}}, %[[GAMMA]] : f32
// CHECK:            %[[BETA:.*]] = memref.load %b[%c] : memref<3xf32>
// CHECK-NEXT:       %[[SHIFT:.*]] = arith.addf %{{.*}}, %[[BETA]] : f32
// CHECK-NEXT:       scf.for %[[R0:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:         scf.for %[[R1:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:           %[[X:.*]] = memref.load %x[%n, %c, %[[R0]], %[[R1]]]
// CHECK-NEXT:           %[[XS:.*]] = arith.mulf %[[X]], %[[SCALE]] : f32
// CHECK-NEXT:           %[[Y:.*]] = arith.addf %[[XS]], %[[SHIFT]] : f32
// CHECK-NEXT:           memref.store %[[Y]], %out0[%n, %c, %[[R0]], %[[R1]]]

// conv2d_transpose: a scatter. Per input channel and kernel tap, the input
// rows and columns whose output `input * stride + tap - pad` lands in the
// output (clamped ranges, no branch) add `x * w[c, o, tap]` there.
func.func @conv2d_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x1x3x3xf32>) -> tensor<1x1x5x5xf32> {
  %0 = relay.nn.conv2d_transpose %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  func.return %0 : tensor<1x1x5x5xf32>
}

// CHECK-LABEL:  func.func @conv2d_transpose(
// CHECK:            memref.store %cst, %out0[%c0, %c0, %{{.*}}, %{{.*}}] : memref<1x1x5x5xf32>
// CHECK:          scf.for %c = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %ki = %c0 to %c3 step %c1 {
// CHECK:              scf.for %kj = %c0 to %c3 step %c1 {
// CHECK:                scf.for %iy = %{{.*}} to %{{.*}} step %c1 {
// CHECK-NEXT:             %[[Y2:.*]] = arith.muli %iy, %c2 : index
// CHECK-NEXT:             %[[Y:.*]] = arith.addi %[[Y2]], %{{.*}} : index
// CHECK-NEXT:             scf.for %ix = %{{.*}} to %{{.*}} step %c1 {
// CHECK-NEXT:               %[[X2:.*]] = arith.muli %ix, %c2 : index
// CHECK-NEXT:               %[[X:.*]] = arith.addi %[[X2]], %{{.*}} : index
// CHECK-NEXT:               %[[IN:.*]] = memref.load %x[%c0, %c, %iy, %ix] : memref<1x2x3x3xf32>
// CHECK-NEXT:               %[[W:.*]] = memref.load %w[%c, %c0, %ki, %kj] : memref<2x1x3x3xf32>
// CHECK-NEXT:               %[[P:.*]] = arith.mulf %[[IN]], %[[W]] : f32
// CHECK-NEXT:               %[[O:.*]] = memref.load %out0[%c0, %c0, %[[Y]], %[[X]]] : memref<1x1x5x5xf32>
// CHECK-NEXT:               %[[S:.*]] = arith.addf %[[O]], %[[P]] : f32
// CHECK-NEXT:               memref.store %[[S]], %out0[%c0, %c0, %[[Y]], %[[X]]] : memref<1x1x5x5xf32>

// max_pool2d: one output row at a time, in two passes over a padded input
// row, a local array of each plane whose padding (one column each side) is
// -inf, stored once per plane: the kernel rows the input has at this output
// row (clamped at run time) maxed into it along the row (contiguous), then
// each output the max of its window's columns, unrolled, never clamped. A max
// is `y != y ? y : (y > x ? y : x)`: the inner select a max instruction, the
// NaN test a branch never taken.
func.func @max_pool2d(%x: tensor<1x2x7x9xf32>) -> tensor<1x2x4x5xf32> {
  %0 = relay.nn.max_pool2d %x {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x7x9xf32>) -> tensor<1x2x4x5xf32>
  func.return %0 : tensor<1x2x4x5xf32>
}

// CHECK-LABEL:  func.func @max_pool2d(
// CHECK:          scf.for %c = %c0 to %c2 step %c1 {
// CHECK-NEXT:       %row = memref.alloca() : memref<11xf32>
// CHECK-NEXT:       memref.store %cst, %row[%c0] : memref<11xf32>
// CHECK-NEXT:       memref.store %cst, %row[%c10] : memref<11xf32>
// CHECK-NEXT:       scf.for %oy = %c0 to %c4 step %c1 {
// CHECK-NEXT:         scf.for %ix = %c0 to %c9 step %c1 {
// CHECK-NEXT:           %[[P:.*]] = arith.addi %ix, %c1 : index
// CHECK-NEXT:           memref.store %cst, %row[%[[P]]] : memref<11xf32>
// CHECK-NEXT:         }
// CHECK:              %[[FIRST:.*]] = arith.select
// CHECK:              %[[END:.*]] = arith.select
// CHECK-NEXT:         scf.for %ki = %[[FIRST]] to %[[END]] step %c1 {
// CHECK:                arith.muli %oy, %c2 : index
// CHECK-NEXT:           %[[Y:.*]] = arith.addi
// CHECK-NEXT:           scf.for %[[IX:.*]] = %c0 to %c9 step %c1 {
// CHECK-NEXT:             %[[AT:.*]] = arith.addi %[[IX]], %c1 : index
// CHECK-NEXT:             %[[R:.*]] = memref.load %row[%[[AT]]] : memref<11xf32>
// CHECK-NEXT:             %[[V:.*]] = memref.load %x[%c0, %c, %[[Y]], %[[IX]]] : memref<1x2x7x9xf32>
// CHECK-NEXT:             %[[GT:.*]] = arith.cmpf ogt, %[[V]], %[[R]] : f32
// CHECK-NEXT:             %[[M:.*]] = arith.select %[[GT]], %[[V]], %[[R]] : f32
// CHECK-NEXT:             %[[NAN:.*]] = arith.cmpf une, %[[V]], %[[V]] : f32
// CHECK-NEXT:             %[[MAX:.*]] = arith.select %[[NAN]], %[[V]], %[[M]] : f32
// CHECK-NEXT:             memref.store %[[MAX]], %row[%[[AT]]] : memref<11xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:         scf.for %ox = %c0 to %c5 step %c1 {
// CHECK-NEXT:           %[[X0:.*]] = arith.muli %ox, %c2 : index
// CHECK-NEXT:           memref.load %row[%[[X0]]] : memref<11xf32>
// CHECK-NEXT:           %[[X1:.*]] = arith.addi %[[X0]], %c1 : index
// CHECK-NEXT:           memref.load %row[%[[X1]]] : memref<11xf32>
// CHECK-COUNT-4:        arith.{{cmpf|select}}
// CHECK-NEXT:           %[[X2:.*]] = arith.addi %[[X0]], %c2 : index
// CHECK-NEXT:           memref.load %row[%[[X2]]] : memref<11xf32>
// CHECK-COUNT-4:        arith.{{cmpf|select}}
// CHECK-NEXT:           memref.store %{{.*}}, %out0[%c0, %c, %oy, %ox] : memref<1x2x4x5xf32>
// CHECK-NEXT:         }

// global_avg_pool2d: each plane's columns summed down its rows into a local
// array (independent adds along the row), then those sums added up and divided.
func.func @global_avg_pool2d(%x: tensor<1x2x3x5xf32>) -> tensor<1x2x1x1xf32> {
  %0 = relay.nn.global_avg_pool2d %x : (tensor<1x2x3x5xf32>) -> tensor<1x2x1x1xf32>
  func.return %0 : tensor<1x2x1x1xf32>
}

// CHECK-LABEL:  func.func @global_avg_pool2d(
// CHECK:          scf.for %c = %c0 to %c2 step %c1 {
// CHECK-NEXT:       %sums = memref.alloca() : memref<5xf32>
// CHECK-NEXT:       scf.for %ix = %c0 to %c5 step %c1 {
// CHECK-NEXT:         %[[F:.*]] = memref.load %x[%c0, %c, %c0, %ix]
// CHECK-NEXT:         memref.store %[[F]], %sums[%ix]
// CHECK-NEXT:       }
// CHECK-NEXT:       scf.for %iy = %c1 to %c3 step %c1 {
// CHECK-NEXT:         scf.for %[[X:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:           %[[V:.*]] = memref.load %x[%c0, %c, %iy, %[[X]]]
// CHECK-NEXT:           %[[S:.*]] = memref.load %sums[%[[X]]]
// CHECK-NEXT:           %[[T:.*]] = arith.addf %[[S]], %[[V]] : f32
// CHECK-NEXT:           memref.store %[[T]], %sums[%[[X]]]
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       %[[S0:.*]] = memref.load %sums[%c0]
// CHECK-NEXT:       memref.store %[[S0]], %out0[%c0, %c, %c0, %c0]
// CHECK-NEXT:       scf.for %[[K:.*]] = %c1 to %c5 step %c1 {
// CHECK-NEXT:         memref.load %sums[%[[K]]]
// CHECK:            }
// CHECK:            arith.divf %{{.*}}, %cst{{.*}} : f32

// max_pool3d: the 2-d sweep with a depth loop outside: taps outermost, then
// the output planes; the loops run over the window, never unrolled.
func.func @max_pool3d(%x: tensor<1x1x4x4x4xf32>) -> tensor<1x1x2x2x2xf32> {
  %0 = relay.nn.max_pool3d %x {pool_size = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x1x4x4x4xf32>) -> tensor<1x1x2x2x2xf32>
  func.return %0 : tensor<1x1x2x2x2xf32>
}

// CHECK-LABEL:  func.func @max_pool3d(
// CHECK:          scf.for %kd = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %ki = %c0 to %c2 step %c1 {
// CHECK-NEXT:         scf.for %kj = %c0 to %c2 step %c1 {
// CHECK-NEXT:           scf.for %[[OZ:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:             %[[Z2:.*]] = arith.muli %[[OZ]], %c2 : index
// CHECK-NEXT:             %[[Z:.*]] = arith.addi %[[Z2]], %kd : index
// CHECK-NEXT:             scf.for %[[OY:.*]] = %c0 to %c2 step %c1 {
// CHECK:                    scf.for %[[OX:.*]] = %c0 to %c2 step %c1 {
// CHECK:                      memref.load %x[%c0, %c0, %[[Z]], %{{.*}}, %{{.*}}] : memref<1x1x4x4x4xf32>
// CHECK-NEXT:                 memref.load %out0[%c0, %c0, %[[OZ]], %[[OY]], %[[OX]]]
// CHECK-NEXT:                 arith.cmpf ogt

// argmax: one row-major walk keeping each output's extreme so far (a scratch
// buffer shaped like the output) and its position along the reduced axes; a
// value replaces the extreme when strictly beyond it, or when it is the first
// NaN (ordered compare, then `uno` on both).
func.func @argmax(%a: tensor<3x5xf32>) -> tensor<3xi32> {
  %0 = relay.argmax %a {axis = array<i64: 1>} : (tensor<3x5xf32>) -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}

// CHECK-LABEL:  func.func @argmax(%a: memref<3x5xf32>, %out0: memref<3xi32>) -> i32 {
// CHECK:          %[[BEST:.*]] = memref.alloc() : memref<3xf32>
// CHECK:          memref.store %cst, %[[BEST]][%{{.*}}] : memref<3xf32>
// CHECK:          memref.store %c0_i32, %out0[%{{.*}}] : memref<3xi32>
// CHECK:          scf.for %[[I:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:       scf.for %[[K:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT:         %[[V:.*]] = memref.load %a[%[[I]], %[[K]]] : memref<3x5xf32>
// CHECK-NEXT:         %[[B:.*]] = memref.load %[[BEST]][%[[I]]] : memref<3xf32>
// CHECK-NEXT:         %[[GT:.*]] = arith.cmpf ogt, %[[V]], %[[B]] : f32
// CHECK-NEXT:         %[[VNAN:.*]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK-NEXT:         %[[BNAN:.*]] = arith.cmpf uno, %[[B]], %[[B]] : f32
// CHECK-NEXT:         %[[BNUM:.*]] = arith.xori %[[BNAN]], %c1_i1 : i1
// CHECK-NEXT:         %[[FIRST:.*]] = arith.andi %[[VNAN]], %[[BNUM]] : i1
// CHECK-NEXT:         %[[NEW:.*]] = arith.ori %[[GT]], %[[FIRST]] : i1
// CHECK-NEXT:         %[[POS:.*]] = arith.index_cast %[[K]] : index to i32
// CHECK-NEXT:         %[[NB:.*]] = arith.select %[[NEW]], %[[V]], %[[B]] : f32
// CHECK-NEXT:         memref.store %[[NB]], %[[BEST]][%[[I]]] : memref<3xf32>
// CHECK-NEXT:         %[[OLD:.*]] = memref.load %out0[%[[I]]] : memref<3xi32>
// CHECK-NEXT:         %[[NI:.*]] = arith.select %[[NEW]], %[[POS]], %[[OLD]] : i32
// CHECK-NEXT:         memref.store %[[NI]], %out0[%[[I]]] : memref<3xi32>
// CHECK:          memref.dealloc %[[BEST]] : memref<3xf32>

// argmin of integers over two axes, keeping the last extreme: a signed `sle`,
// the position row-major within the reduced axes (j * 4 + k).
func.func @argmin_last(%a: tensor<2x3x4xi8>) -> tensor<2x1x1xi32> {
  %0 = relay.argmin %a {axis = array<i64: 1, 2>, keepdims = true, select_last_index = true} : (tensor<2x3x4xi8>) -> tensor<2x1x1xi32>
  func.return %0 : tensor<2x1x1xi32>
}

// CHECK-LABEL:  func.func @argmin_last(
// CHECK:            %[[J4:.*]] = arith.muli %{{.*}}, %c4 : index
// CHECK-NEXT:       %[[POS:.*]] = arith.addi %[[J4]], %{{.*}} : index
// CHECK:            arith.cmpi sle, %{{.*}}, %{{.*}} : i8
// CHECK-NEXT:       arith.index_cast %[[POS]] : index to i32
