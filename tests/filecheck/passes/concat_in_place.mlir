// RUN: byoc-opt %s -p convert-relay-to-loops --split-input-file | filecheck %s
// RUN: byoc-opt %s --annotate=ccompiler --partition --split-input-file | filecheck %s --check-prefix=PART

// Concatenations written in place (passes/concat_in_place.py): along the
// channels at batch 1 each operand is a contiguous run of the result, so its
// producer writes that run of one i8 buffer (a memref.view) and the
// concatenation copies nothing; ccompiler leaves such concatenations to the host.

func.func @fire(%x: tensor<1x2x3xf32>, %y: tensor<1x1x3xf32>) -> tensor<1x3x3xf32> {
  %a = relay.nn.relu %x : (tensor<1x2x3xf32>) -> tensor<1x2x3xf32>
  %b = relay.negative %y : (tensor<1x1x3xf32>) -> tensor<1x1x3xf32>
  %c = relay.concatenate %a, %b {axis = 1 : i64} : (tensor<1x2x3xf32>, tensor<1x1x3xf32>) -> tensor<1x3x3xf32>
  %d = relay.nn.relu %c : (tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  func.return %d : tensor<1x3x3xf32>
}

// CHECK-LABEL: func.func @fire(
// CHECK:         %c = memref.alloc() : memref<36xi8>
// CHECK-NEXT:    %a = memref.view %c[%c0][] : memref<36xi8> to memref<1x2x3xf32>
// CHECK:           memref.store %{{.*}}, %a[
// CHECK:         %b = memref.view %c[%c24][] : memref<36xi8> to memref<1x1x3xf32>
// CHECK:           memref.store %{{.*}}, %b[
// CHECK:         %[[C:.*]] = memref.view %c[%c0][] : memref<36xi8> to memref<1x3x3xf32>
// CHECK-NOT:     memref.store %{{.*}}, %[[C]][
// CHECK:         memref.load %[[C]][
// CHECK:         memref.dealloc %c : memref<36xi8>

// PART-LABEL: func.func @fire(
// PART-NEXT:    %[[A:.*]], %[[B:.*]] = extern.call @ccompiler_0(%x, %y)
// PART-NEXT:    %c = relay.concatenate %[[A]], %[[B]] {axis = 1 : i64}
// PART-NEXT:    extern.call @ccompiler_1(%c)

// -----

// Nested: the inner concatenation lives at the start of the outer one's
// buffer, also read by another op; the argument %x is copied into its slice.

func.func @nested(%x: tensor<1x2xf32>) -> (tensor<1x6xf32>, tensor<1x4xf32>) {
  %a = relay.nn.relu %x : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %b = relay.negative %x : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %c = relay.concatenate %a, %b {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
  %e = relay.nn.relu %c : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %f = relay.concatenate %c, %x {axis = 1 : i64} : (tensor<1x4xf32>, tensor<1x2xf32>) -> tensor<1x6xf32>
  %g = relay.add %f, %f : (tensor<1x6xf32>, tensor<1x6xf32>) -> tensor<1x6xf32>
  func.return %g, %e : tensor<1x6xf32>, tensor<1x4xf32>
}

// CHECK-LABEL: func.func @nested(
// CHECK:         %f = memref.alloc() : memref<24xi8>
// CHECK-NEXT:    %a = memref.view %f[%c0][] : memref<24xi8> to memref<1x2xf32>
// CHECK:         %b = memref.view %f[%c8][] : memref<24xi8> to memref<1x2xf32>
// CHECK:         %c = memref.view %f[%c0][] : memref<24xi8> to memref<1x4xf32>
// CHECK-NOT:     memref.store %{{.*}}, %c[
// CHECK:         memref.load %c[
// CHECK:         %[[F:.*]] = memref.view %f[%c0][] : memref<24xi8> to memref<1x6xf32>
// CHECK:           %[[X:.*]] = memref.load %x[
// CHECK:           memref.store %[[X]], %[[F]][
// CHECK:         memref.dealloc %f : memref<24xi8>

// -----

// Copied: a returned concatenation (its buffer is the caller's), one at
// batch 2 along the channels (not contiguous), and an operand read twice
// (written in place once).

func.func @copied(%x: tensor<2x2xf32>, %y: tensor<1x2x2xf32>) -> (tensor<2x4xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) {
  %a = relay.nn.relu %x : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %c = relay.concatenate %a, %a {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %b = relay.nn.relu %y : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %d = relay.concatenate %b, %b {axis = 1 : i64} : (tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x4x2xf32>
  %e = relay.negative %d : (tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %f = relay.concatenate %b, %b {axis = 1 : i64} : (tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x4x2xf32>
  func.return %c, %e, %f : tensor<2x4xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>
}

// CHECK-LABEL: func.func @copied(
// CHECK:         %a = memref.alloc() : memref<2x2xf32>
// CHECK-NOT:     memref.view %{{.*}} to memref<2x2xf32>
// CHECK:         memref.store %{{.*}}, %out0[
// CHECK:         memref.store %{{.*}}, %out0[
// CHECK:         %d = memref.alloc() : memref<32xi8>
// CHECK-NEXT:    %b = memref.view %d[%c0][] : memref<32xi8> to memref<1x2x2xf32>
// CHECK:         %[[D:.*]] = memref.view %d[%c0][] : memref<32xi8> to memref<1x4x2xf32>
// CHECK:           %[[B:.*]] = memref.load %b[
// CHECK:           memref.store %[[B]], %[[D]][
// CHECK-NOT:     memref.view
// CHECK:         func.return

// PART-LABEL: func.func @copied(
// PART-NEXT:    %[[C:.*]], %[[B:.*]], %[[F:.*]] = extern.call @ccompiler_0(%x, %y)
// PART-NEXT:    %d = relay.concatenate %[[B]], %[[B]] {axis = 1 : i64}
// PART-NEXT:    %[[E:.*]] = extern.call @ccompiler_1(%d)
// PART-NEXT:    func.return %[[C]], %[[E]], %[[F]]
// PART:       func.func private @ccompiler_0(
// PART:         relay.concatenate
// PART:         relay.concatenate
