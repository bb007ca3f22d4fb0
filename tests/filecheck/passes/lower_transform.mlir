// RUN: byoc-opt %s -p convert-relay-to-loops | filecheck %s
// RUN: byoc-opt %s -p convert-relay-to-loops,convert-loops-to-emitc -t c | filecheck %s --check-prefix=C

// The lowerings of passes/lower_transform.py, through convert-relay-to-loops,
// and the C they print as.

// take, "fast": each index is read once, outside the copy of the row it
// selects; a negative one counts from the end, one still out of range sets the
// status (returned after the loops) and reads row 0 instead.
func.func @take_fast(%t: tensor<10x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = relay.take %t, %ids {axis = 0 : i64, mode = "fast"} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL:  func.func @take_fast(%t: memref<10x4xf32>, %ids: memref<2x3xi64>, %out0: memref<2x3x4xf32>) -> i32 {
// CHECK:          %status = memref.alloca() : memref<i32>
// CHECK-NEXT:     memref.store %c0_i32, %status[] : memref<i32>
// CHECK-NEXT:     scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:         %[[RAW:.*]] = memref.load %ids[%i0, %i1] : memref<2x3xi64>
// CHECK-NEXT:         %[[IDX:.*]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK-NEXT:         %[[NEG:.*]] = arith.cmpi slt, %[[IDX]], %c0 : index
// CHECK-NEXT:         %[[UP:.*]] = arith.addi %[[IDX]], %c10 : index
// CHECK-NEXT:         %[[W:.*]] = arith.select %[[NEG]], %[[UP]], %[[IDX]] : index
// CHECK-NEXT:         %[[BAD:.*]] = arith.cmpi uge, %[[W]], %c10 : index
// CHECK-NEXT:         scf.if %[[BAD]] {
// CHECK-NEXT:           memref.store %c1_i32, %status[] : memref<i32>
// CHECK-NEXT:         }
// CHECK-NEXT:         %[[ROW:.*]] = arith.select %[[BAD]], %c0, %[[W]] : index
// CHECK-NEXT:         scf.for %k0 = %c0 to %c4 step %c1 {
// CHECK-NEXT:           %[[V:.*]] = memref.load %t[%[[ROW]], %k0] : memref<10x4xf32>
// CHECK-NEXT:           memref.store %[[V]], %out0[%i0, %i1, %k0] : memref<2x3x4xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     %[[S:.*]] = memref.load %status[] : memref<i32>
// CHECK-NEXT:     func.return %[[S]] : i32

// C-LABEL: int32_t take_fast(const float* restrict v0, const int64_t* restrict v1, float* restrict v2) {
// C:         int64_t [[RAW:v[0-9]+]] = v1[
// C:         bool [[BAD:v[0-9]+]] = ((uint64_t) [[W:v[0-9]+]]) >= ((uint64_t) 10);
// C-NEXT:    if ([[BAD]]) {

// take, "wrap" along the last axis with int32 indices: remsi, then a negative
// remainder moves up by the size.
func.func @take_wrap(%t: tensor<10x4xi64>, %ids: tensor<5xi32>) -> tensor<10x5xi64> {
  %0 = relay.take %t, %ids {axis = -1 : i64, mode = "wrap"} : (tensor<10x4xi64>, tensor<5xi32>) -> tensor<10x5xi64>
  func.return %0 : tensor<10x5xi64>
}

// CHECK-LABEL:  func.func @take_wrap(%t: memref<10x4xi64>, %ids: memref<5xi32>, %out0: memref<10x5xi64>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c10 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c5 step %c1 {
// CHECK-NEXT:         %[[RAW:.*]] = memref.load %ids[%i1] : memref<5xi32>
// CHECK-NEXT:         %[[IDX:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK-NEXT:         %[[REM:.*]] = arith.remsi %[[IDX]], %c4 : index
// CHECK-NEXT:         %[[NEG:.*]] = arith.cmpi slt, %[[REM]], %c0 : index
// CHECK-NEXT:         %[[UP:.*]] = arith.addi %[[REM]], %c4 : index
// CHECK-NEXT:         %[[COL:.*]] = arith.select %[[NEG]], %[[UP]], %[[REM]] : index
// CHECK-NEXT:         %[[V:.*]] = memref.load %t[%i0, %[[COL]]] : memref<10x4xi64>
// CHECK-NEXT:         memref.store %[[V]], %out0[%i0, %i1] : memref<10x5xi64>
// CHECK:          func.return %c0_i32 : i32

// C-LABEL: int32_t take_wrap(const int64_t* restrict v0, const int32_t* restrict v1, int64_t* restrict v2) {

// take, "clip", no axis: indices into the flattened data, clamped to [0, 39]
// and split back into (row, column).
func.func @take_clip_flat(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3xf32> {
  %0 = relay.take %t, %ids : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// CHECK-LABEL:  func.func @take_clip_flat(%t: memref<10x4xf32>, %ids: memref<3xi64>, %out0: memref<3xf32>) -> i32 {
// CHECK:          scf.for %j0 = %c0 to %c3 step %c1 {
// CHECK-NEXT:       %[[RAW:.*]] = memref.load %ids[%j0] : memref<3xi64>
// CHECK-NEXT:       %[[IDX:.*]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK-NEXT:       %[[GT:.*]] = arith.cmpi sgt, %[[IDX]], %c0 : index
// CHECK-NEXT:       %[[LOW:.*]] = arith.select %[[GT]], %[[IDX]], %c0 : index
// CHECK-NEXT:       %[[LT:.*]] = arith.cmpi slt, %[[LOW]], %c39 : index
// CHECK-NEXT:       %[[FLAT:.*]] = arith.select %[[LT]], %[[LOW]], %c39 : index
// CHECK-NEXT:       %[[ROW:.*]] = arith.divui %[[FLAT]], %c4 : index
// CHECK-NEXT:       %[[COL:.*]] = arith.remui %[[FLAT]], %c4 : index
// CHECK-NEXT:       %[[V:.*]] = memref.load %t[%[[ROW]], %[[COL]]] : memref<10x4xf32>
// CHECK-NEXT:       memref.store %[[V]], %out0[%j0] : memref<3xf32>

// Integer and bool tensors are buffers of their C types.
func.func @integer_buffers(%a: tensor<2x3xi1>, %b: tensor<4xui8>) -> (tensor<3x2xi1>, tensor<2x2xui8>) {
  %0 = relay.transpose %a : (tensor<2x3xi1>) -> tensor<3x2xi1>
  %1 = relay.reshape %b {newshape = array<i64: 2, 2>} : (tensor<4xui8>) -> tensor<2x2xui8>
  func.return %0, %1 : tensor<3x2xi1>, tensor<2x2xui8>
}

// C-LABEL: int32_t integer_buffers(const bool* restrict v0, const uint8_t* restrict v1, bool* restrict v2, uint8_t* restrict v3) {
