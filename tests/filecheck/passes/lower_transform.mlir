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

// strided_slice: a nest over the output reading start + i * step; a size-1
// output axis has no loop.
func.func @strided_slice(%x: tensor<2x3x4xf32>) -> tensor<2x1x2xf32> {
  %0 = relay.strided_slice %x {begin = array<i64: 1, 3>, end = array<i64: 0, -9223372036854775807>, strides = array<i64: -1, -2>, axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x1x2xf32>
  func.return %0 : tensor<2x1x2xf32>
}

// CHECK-LABEL:  func.func @strided_slice(%x: memref<2x3x4xf32>, %out0: memref<2x1x2xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %i2 = %c0 to %c2 step %c1 {
// CHECK-NEXT:         %[[S:.*]] = arith.muli %i2, %cm2 : index
// CHECK-NEXT:         %[[I:.*]] = arith.addi %[[S]], %c3 : index
// CHECK-NEXT:         %[[V:.*]] = memref.load %x[%i0, %c1, %[[I]]] : memref<2x3x4xf32>
// CHECK-NEXT:         memref.store %[[V]], %out0[%i0, %c0, %i2] : memref<2x1x2xf32>

// tile: (repeat, element) loops per axis, the output index repeat * n + element.
func.func @tile(%x: tensor<3xi64>) -> tensor<2x6xi64> {
  %0 = relay.tile %x {reps = array<i64: 2, 2>} : (tensor<3xi64>) -> tensor<2x6xi64>
  func.return %0 : tensor<2x6xi64>
}

// CHECK-LABEL:  func.func @tile(%x: memref<3xi64>, %out0: memref<2x6xi64>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %i2 = %c0 to %c2 step %c1 {
// CHECK-NEXT:         scf.for %i3 = %c0 to %c3 step %c1 {
// CHECK-NEXT:           %[[R:.*]] = arith.muli %i2, %c3 : index
// CHECK-NEXT:           %[[O:.*]] = arith.addi %[[R]], %i3 : index
// CHECK-NEXT:           %[[V:.*]] = memref.load %x[%i3] : memref<3xi64>
// CHECK-NEXT:           memref.store %[[V]], %out0[%i0, %[[O]]] : memref<2x6xi64>

// pad, "constant": fill with the value, then copy the input inside.
func.func @pad_constant(%x: tensor<3x4xf32>) -> tensor<4x7xf32> {
  %0 = relay.nn.pad %x {pad_width = array<i64: 1, 0, 2, 1>, pad_value = 5.000000e-01 : f64} : (tensor<3x4xf32>) -> tensor<4x7xf32>
  func.return %0 : tensor<4x7xf32>
}

// CHECK-LABEL:  func.func @pad_constant(%x: memref<3x4xf32>, %out0: memref<4x7xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c4 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c7 step %c1 {
// CHECK-NEXT:         memref.store %cst, %out0[%i0, %i1] : memref<4x7xf32>
// CHECK:          scf.for %i0_1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:       scf.for %i1_1 = %c0 to %c4 step %c1 {
// CHECK-NEXT:         %[[R:.*]] = arith.addi %i0_1, %c1 : index
// CHECK-NEXT:         %[[CC:.*]] = arith.addi %i1_1, %c2 : index
// CHECK-NEXT:         %[[V:.*]] = memref.load %x[%i0_1, %i1_1] : memref<3x4xf32>
// CHECK-NEXT:         memref.store %[[V]], %out0[%[[R]], %[[CC]]] : memref<4x7xf32>

// pad, "reflect": only the padded axis maps its index: -j before the start,
// 2(n - 1) - j past the end.
func.func @pad_reflect(%x: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %0 = relay.nn.pad %x {pad_width = array<i64: 1, 1, 0, 0>, pad_mode = "reflect"} : (tensor<3x4xf32>) -> tensor<5x4xf32>
  func.return %0 : tensor<5x4xf32>
}

// CHECK-LABEL:  func.func @pad_reflect(%x: memref<3x4xf32>, %out0: memref<5x4xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c5 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c4 step %c1 {
// CHECK-NEXT:         %[[J:.*]] = arith.addi %i0, %cm1 : index
// CHECK-NEXT:         %[[NEG:.*]] = arith.cmpi slt, %[[J]], %c0 : index
// CHECK-NEXT:         %[[MJ:.*]] = arith.subi %c0, %[[J]] : index
// CHECK-NEXT:         %[[LOW:.*]] = arith.select %[[NEG]], %[[MJ]], %[[J]] : index
// CHECK-NEXT:         %[[HI:.*]] = arith.subi %c4, %[[LOW]] : index
// CHECK-NEXT:         %[[PAST:.*]] = arith.cmpi slt, %c2, %[[LOW]] : index
// CHECK-NEXT:         %[[ROW:.*]] = arith.select %[[PAST]], %[[HI]], %[[LOW]] : index
// CHECK-NEXT:         %[[V:.*]] = memref.load %x[%[[ROW]], %i1] : memref<3x4xf32>

// where and cast are elementwise: fused into one nest (select, then fptosi).
func.func @where_cast(%c: tensor<3x4xi1>, %x: tensor<3x4xf32>, %y: tensor<4xf32>) -> tensor<3x4xi64> {
  %0 = relay.where %c, %x, %y : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %1 = relay.cast %0 {dtype = "int64"} : (tensor<3x4xf32>) -> tensor<3x4xi64>
  func.return %1 : tensor<3x4xi64>
}

// CHECK-LABEL:  func.func @where_cast(
// CHECK:              %[[CC:.*]] = memref.load %c[%i0, %i1] : memref<3x4xi1>
// CHECK-NEXT:         %[[X:.*]] = memref.load %x[%i0, %i1] : memref<3x4xf32>
// CHECK-NEXT:         %[[Y:.*]] = memref.load %y[%i1] : memref<4xf32>
// CHECK-NEXT:         %[[S:.*]] = arith.select %[[CC]], %[[X]], %[[Y]] : f32
// CHECK-NEXT:         %[[I:.*]] = arith.fptosi %[[S]] : f32 to i64
// CHECK-NEXT:         memref.store %[[I]], %out0[%i0, %i1] : memref<3x4xi64>

// Casts from ui8 extend with zeros; to a same-width type they keep the bits.
func.func @casts(%x: tensor<3xui8>) -> (tensor<3xf32>, tensor<3xi8>) {
  %0 = relay.cast %x {dtype = "float32"} : (tensor<3xui8>) -> tensor<3xf32>
  %1 = relay.cast %x {dtype = "int8"} : (tensor<3xui8>) -> tensor<3xi8>
  func.return %0, %1 : tensor<3xf32>, tensor<3xi8>
}

// CHECK-LABEL:  func.func @casts(
// CHECK:          %[[E:.*]] = arith.extui %{{.*}} : ui8 to i32
// CHECK-NEXT:     %[[F:.*]] = arith.sitofp %[[E]] : i32 to f32
// CHECK:          %[[W:.*]] = arith.extui %{{.*}} : ui8 to i16
// CHECK-NEXT:     %[[T:.*]] = arith.trunci %[[W]] : i16 to i8
// C-LABEL: int32_t casts(const uint8_t* restrict v0, float* restrict v1, int8_t* restrict v2) {
// C:         (float) ((int32_t)

// depth_to_space (DCR): a nest over (c, h, i, w, j) writing the output in order.
func.func @depth_to_space(%x: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
  %0 = relay.nn.depth_to_space %x {block_size = 2 : i64} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  func.return %0 : tensor<1x2x4x6xf32>
}

// CHECK-LABEL:  func.func @depth_to_space(
// CHECK:                    %[[IB:.*]] = arith.muli %i3, %c2 : index
// CHECK-NEXT:               %[[IJ:.*]] = arith.addi %[[IB]], %i5 : index
// CHECK-NEXT:               %[[CB:.*]] = arith.muli %[[IJ]], %c2 : index
// CHECK-NEXT:               %[[CH:.*]] = arith.addi %[[CB]], %i1 : index
// CHECK-NEXT:               %[[V:.*]] = memref.load %x[%c0, %[[CH]], %i2, %i4] : memref<1x8x2x3xf32>

// resize2d, nearest: a table of input indices per axis (computed in float64,
// floored without libm, clamped), then a nest that only loads.
func.func @resize_nearest(%x: tensor<1x1x2x3xf32>) -> tensor<1x1x4x6xf32> {
  %0 = relay.image.resize2d %x {size = array<i64: 4, 6>, method = "nearest_neighbor", coordinate_transformation_mode = "asymmetric", rounding_method = "floor"} : (tensor<1x1x2x3xf32>) -> tensor<1x1x4x6xf32>
  func.return %0 : tensor<1x1x4x6xf32>
}

// CHECK-LABEL:  func.func @resize_nearest(
// CHECK:          %y_index = memref.alloc() : memref<4x1xi64>
// CHECK-NEXT:     scf.for %o0 = %c0 to %c4 step %c1 {
// CHECK-NEXT:       %[[I:.*]] = arith.index_cast %o0 : index to i64
// CHECK-NEXT:       %[[F:.*]] = arith.sitofp %[[I]] : i64 to f64
// CHECK-NEXT:       %[[X:.*]] = arith.divf %[[F]], %cst : f64
// CHECK:            %[[UP:.*]] = arith.addf %{{.*}}, %cst_2 : f64
// CHECK-NEXT:       %[[T:.*]] = arith.fptosi %[[UP]] : f64 to i64
// CHECK-NEXT:       %[[FL:.*]] = arith.subi %[[T]], %c1_i64 : i64
// CHECK:            memref.store %{{.*}}, %y_index[%o0, %c0] : memref<4x1xi64>
// CHECK:          %x_index = memref.alloc() : memref<6x1xi64>
// CHECK:          scf.for %i2 = %c0 to %c4 step %c1 {
// CHECK-NEXT:       %[[ROW:.*]] = memref.load %y_index[%i2, %c0] : memref<4x1xi64>
// CHECK-NEXT:       %[[R:.*]] = arith.index_cast %[[ROW]] : i64 to index
// CHECK-NEXT:       scf.for %x0 = %c0 to %c6 step %c1 {
// CHECK-NEXT:         %[[COL:.*]] = memref.load %x_index[%x0, %c0] : memref<6x1xi64>
// CHECK-NEXT:         %[[CC:.*]] = arith.index_cast %[[COL]] : i64 to index
// CHECK-NEXT:         %[[V:.*]] = memref.load %x[%c0, %c0, %[[R]], %[[CC]]] : memref<1x1x2x3xf32>
// CHECK-NEXT:         memref.store %[[V]], %out0[%c0, %c0, %i2, %x0] : memref<1x1x4x6xf32>
// CHECK:          memref.dealloc %y_index : memref<4x1xi64>
// CHECK-NEXT:     memref.dealloc %x_index : memref<6x1xi64>

// gather along axis 1: one nest over the indices; each index normalised as
// take's "fast" mode (negative from the end, out of range sets the status and
// reads element 0) and used in place of the axis' induction variable.
func.func @gather(%d: tensor<3x4xf32>, %ids: tensor<2x3xi32>) -> tensor<2x3xf32> {
  %0 = relay.gather %d, %ids {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// CHECK-LABEL:  func.func @gather(%d: memref<3x4xf32>, %ids: memref<2x3xi32>, %out0: memref<2x3xf32>) -> i32 {
// CHECK:          scf.for %i0 = %c0 to %c2 step %c1 {
// CHECK-NEXT:       scf.for %i1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:         %[[RAW:.*]] = memref.load %ids[%i0, %i1] : memref<2x3xi32>
// CHECK-NEXT:         %[[IDX:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK:              %[[BAD:.*]] = arith.cmpi uge, %{{.*}}, %c4 : index
// CHECK-NEXT:         scf.if %[[BAD]] {
// CHECK-NEXT:           memref.store %c1_i32, %status[] : memref<i32>
// CHECK-NEXT:         }
// CHECK-NEXT:         %[[COL:.*]] = arith.select %[[BAD]], %c0, %{{.*}} : index
// CHECK-NEXT:         %[[V:.*]] = memref.load %d[%i0, %[[COL]]] : memref<3x4xf32>
// CHECK-NEXT:         memref.store %[[V]], %out0[%i0, %i1] : memref<2x3xf32>
// CHECK:          %[[S:.*]] = memref.load %status[] : memref<i32>
// CHECK-NEXT:     func.return %[[S]] : i32

// C-LABEL: int32_t gather(const float* restrict v0, const int32_t* restrict v1, float* restrict v2) {

// cumsum: the first sum stored (0 when exclusive), then each next one the
// previous sum read back plus the next element, walking the axis backwards
// with reverse. trilu: one nest, j - i compared with k (signed), else 0.
func.func @scan_and_triangle(%a: tensor<2x5xf32>, %m: tensor<3x4xi32>) -> (tensor<2x5xf32>, tensor<3x4xi32>) {
  %0 = relay.cumsum %a {axis = 1 : i64, exclusive = true, reverse = true} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %1 = relay.trilu %m {k = -1 : i64, upper = false} : (tensor<3x4xi32>) -> tensor<3x4xi32>
  func.return %0, %1 : tensor<2x5xf32>, tensor<3x4xi32>
}

// CHECK-LABEL:  func.func @scan_and_triangle(
// CHECK:          scf.for %[[I:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:       memref.store %cst, %out0[%[[I]], %c4] : memref<2x5xf32>
// CHECK-NEXT:       scf.for %[[J:.*]] = %c1 to %c5 step %c1 {
// CHECK-NEXT:         %[[CUR:.*]] = arith.subi %c4, %[[J]] : index
// CHECK-NEXT:         %[[PREV:.*]] = arith.addi %[[CUR]], %c1 : index
// CHECK-NEXT:         %[[X:.*]] = memref.load %a[%[[I]], %[[PREV]]] : memref<2x5xf32>
// CHECK-NEXT:         %[[S:.*]] = memref.load %out0[%[[I]], %[[PREV]]] : memref<2x5xf32>
// CHECK-NEXT:         %[[T:.*]] = arith.addf %[[S]], %[[X]] : f32
// CHECK-NEXT:         memref.store %[[T]], %out0[%[[I]], %[[CUR]]] : memref<2x5xf32>
// CHECK:          scf.for %[[ROW:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:       scf.for %[[COL:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:         %[[D:.*]] = arith.subi %[[COL]], %[[ROW]] : index
// CHECK-NEXT:         %[[KEEP:.*]] = arith.cmpi sle, %[[D]], %cm1 : index
// CHECK-NEXT:         %[[V:.*]] = memref.load %m[%[[ROW]], %[[COL]]] : memref<3x4xi32>
// CHECK-NEXT:         arith.select %[[KEEP]], %[[V]], %c0_i32 : i32
