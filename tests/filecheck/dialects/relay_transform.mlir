// RUN: byoc-opt %s | filecheck %s
// RUN: byoc-opt %s --print-op-generic | byoc-opt | filecheck %s
// RUN: byoc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The data-movement ops of relay.TRANSFORM_OPS in their custom form (default
// attributes left out) and generic form (every default filled in).

// CHECK-LABEL: func.func @take(
// CHECK-NEXT:    %0 = relay.take %t, %ids {axis = 0 : i64, mode = "fast"} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %1 = relay.take %t, %ids32 {axis = -1 : i64, mode = "wrap"} : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
// CHECK-NEXT:    %2 = relay.take %t, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = relay.take %k, %ids32 {axis = 0 : i64} : (tensor<3xi64>, tensor<5xi32>) -> tensor<5xi64>
// GENERIC-LABEL: sym_name = "take"
// GENERIC:       "relay.take"(%t, %ids) <{axis = 0 : i64, batch_dims = 0 : i64, mode = "fast"}>
// GENERIC:       "relay.take"(%t, %ids32) <{axis = -1 : i64, batch_dims = 0 : i64, mode = "wrap"}>
// GENERIC:       "relay.take"(%t, %ids) <{batch_dims = 0 : i64, mode = "clip"}>
func.func @take(%t: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %ids32: tensor<5xi32>, %k: tensor<3xi64>) -> (tensor<2x3x4xf32>, tensor<10x5xf32>, tensor<2x3xf32>, tensor<5xi64>) {
  %0 = relay.take %t, %ids {axis = 0 : i64, mode = "fast"} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %1 = relay.take %t, %ids32 {axis = -1 : i64, mode = "wrap"} : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
  %2 = relay.take %t, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  %3 = relay.take %k, %ids32 {axis = 0 : i64} : (tensor<3xi64>, tensor<5xi32>) -> tensor<5xi64>
  func.return %0, %1, %2, %3 : tensor<2x3x4xf32>, tensor<10x5xf32>, tensor<2x3xf32>, tensor<5xi64>
}

// The copying ops take integer tensors too.
// CHECK-LABEL: func.func @integers(
// CHECK-NEXT:    %0 = relay.transpose %a : (tensor<2x3xi64>) -> tensor<3x2xi64>
// CHECK-NEXT:    %1 = relay.reshape %b {newshape = array<i64: 6>} : (tensor<3x2xi1>) -> tensor<6xi1>
// CHECK-NEXT:    %2 = relay.concatenate %c, %c : (tensor<2x2xui8>, tensor<2x2xui8>) -> tensor<4x2xui8>
// CHECK-NEXT:    %3 = relay.constant dense<[1, -2]> : tensor<2xi32>
func.func @integers(%a: tensor<2x3xi64>, %b: tensor<3x2xi1>, %c: tensor<2x2xui8>) -> (tensor<3x2xi64>, tensor<6xi1>, tensor<4x2xui8>, tensor<2xi32>) {
  %0 = relay.transpose %a : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %1 = relay.reshape %b {newshape = array<i64: 6>} : (tensor<3x2xi1>) -> tensor<6xi1>
  %2 = relay.concatenate %c, %c : (tensor<2x2xui8>, tensor<2x2xui8>) -> tensor<4x2xui8>
  %3 = relay.constant dense<[1, -2]> : tensor<2xi32>
  func.return %0, %1, %2, %3 : tensor<3x2xi64>, tensor<6xi1>, tensor<4x2xui8>, tensor<2xi32>
}

// CHECK-LABEL: func.func @slicing(
// CHECK-NEXT:    %0 = relay.strided_slice %x {begin = array<i64: 1, 3>, end = array<i64: 0, -9223372036854775807>, strides = array<i64: -1, -2>, axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x1x2xf32>
// CHECK-NEXT:    %1 = relay.strided_slice %i {begin = array<i64: 1>, end = array<i64: 2>, slice_mode = "size"} : (tensor<6xi64>) -> tensor<2xi64>
// CHECK-NEXT:    %2 = relay.tile %x {reps = array<i64: 2, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
// CHECK-NEXT:    %3 = relay.broadcast_to %x {shape = array<i64: 3, 2, 3, 4>} : (tensor<2x3x4xf32>) -> tensor<3x2x3x4xf32>
// GENERIC-LABEL: sym_name = "slicing"
// GENERIC:       "relay.strided_slice"(%x) <{begin = array<i64: 1, 3>, end = array<i64: 0, -9223372036854775807>, strides = array<i64: -1, -2>, axes = array<i64: 1, 2>, slice_mode = "end"}>
// GENERIC:       "relay.strided_slice"(%i) <{begin = array<i64: 1>, end = array<i64: 2>, slice_mode = "size"}>
// GENERIC:       "relay.tile"(%x) <{reps = array<i64: 2, 1, 1>}>
// GENERIC:       "relay.broadcast_to"(%x) <{shape = array<i64: 3, 2, 3, 4>}>
func.func @slicing(%x: tensor<2x3x4xf32>, %i: tensor<6xi64>) -> (tensor<2x1x2xf32>, tensor<2xi64>, tensor<4x3x4xf32>, tensor<3x2x3x4xf32>) {
  %0 = relay.strided_slice %x {begin = array<i64: 1, 3>, end = array<i64: 0, -9223372036854775807>, strides = array<i64: -1, -2>, axes = array<i64: 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x1x2xf32>
  %1 = relay.strided_slice %i {begin = array<i64: 1>, end = array<i64: 2>, slice_mode = "size"} : (tensor<6xi64>) -> tensor<2xi64>
  %2 = relay.tile %x {reps = array<i64: 2, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  %3 = relay.broadcast_to %x {shape = array<i64: 3, 2, 3, 4>} : (tensor<2x3x4xf32>) -> tensor<3x2x3x4xf32>
  func.return %0, %1, %2, %3 : tensor<2x1x2xf32>, tensor<2xi64>, tensor<4x3x4xf32>, tensor<3x2x3x4xf32>
}

// CHECK-LABEL: func.func @padding(
// CHECK-NEXT:    %0 = relay.nn.pad %x {pad_width = array<i64: 1, 0, 2, 1>, pad_value = 5.000000e-01 : f64} : (tensor<3x4xf32>) -> tensor<4x7xf32>
// CHECK-NEXT:    %1 = relay.nn.pad %x {pad_width = array<i64: 1, 1, 0, 0>, pad_mode = "reflect"} : (tensor<3x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %2 = relay.where %c, %x, %y : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %3 = relay.cast %x {dtype = "int64"} : (tensor<3x4xf32>) -> tensor<3x4xi64>
// GENERIC-LABEL: sym_name = "padding"
// GENERIC:       "relay.nn.pad"(%x) <{pad_width = array<i64: 1, 0, 2, 1>, pad_value = 5.000000e-01 : f64, pad_mode = "constant"}>
// GENERIC:       "relay.nn.pad"(%x) <{pad_width = array<i64: 1, 1, 0, 0>, pad_value = 0.000000e+00 : f64, pad_mode = "reflect"}>
// GENERIC:       "relay.where"(%c, %x, %y)
// GENERIC:       "relay.cast"(%x) <{dtype = "int64"}>
func.func @padding(%x: tensor<3x4xf32>, %c: tensor<3x4xi1>, %y: tensor<4xf32>) -> (tensor<4x7xf32>, tensor<5x4xf32>, tensor<3x4xf32>, tensor<3x4xi64>) {
  %0 = relay.nn.pad %x {pad_width = array<i64: 1, 0, 2, 1>, pad_value = 5.000000e-01 : f64} : (tensor<3x4xf32>) -> tensor<4x7xf32>
  %1 = relay.nn.pad %x {pad_width = array<i64: 1, 1, 0, 0>, pad_mode = "reflect"} : (tensor<3x4xf32>) -> tensor<5x4xf32>
  %2 = relay.where %c, %x, %y : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %3 = relay.cast %x {dtype = "int64"} : (tensor<3x4xf32>) -> tensor<3x4xi64>
  func.return %0, %1, %2, %3 : tensor<4x7xf32>, tensor<5x4xf32>, tensor<3x4xf32>, tensor<3x4xi64>
}

// CHECK-LABEL: func.func @images(
// CHECK-NEXT:    %0 = relay.nn.depth_to_space %x {block_size = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
// CHECK-NEXT:    %1 = relay.nn.space_to_depth %x {block_size = 1 : i64} : (tensor<1x8x2x3xf32>) -> tensor<1x8x2x3xf32>
// CHECK-NEXT:    %2 = relay.image.resize2d %x {size = array<i64: 4, 6>, method = "nearest_neighbor", coordinate_transformation_mode = "asymmetric", rounding_method = "floor"} : (tensor<1x8x2x3xf32>) -> tensor<1x8x4x6xf32>
// CHECK-NEXT:    %3 = relay.image.resize2d %x {size = array<i64: 3, 5>, scale = array<f64: 1.500000e+00, 1.600000e+00>} : (tensor<1x8x2x3xf32>) -> tensor<1x8x3x5xf32>
// GENERIC-LABEL: sym_name = "images"
// GENERIC:       "relay.nn.depth_to_space"(%x) <{block_size = 2 : i64, layout = "NCHW", mode = "CRD"}>
// GENERIC:       "relay.nn.space_to_depth"(%x) <{block_size = 1 : i64, layout = "NCHW", mode = "DCR"}>
// GENERIC:       "relay.image.resize2d"(%x) <{size = array<i64: 4, 6>, layout = "NCHW", method = "nearest_neighbor", coordinate_transformation_mode = "asymmetric", rounding_method = "floor", cubic_alpha = -5.000000e-01 : f64, cubic_exclude = 0 : i64, extrapolation_value = 0.000000e+00 : f64}>
// GENERIC:       "relay.image.resize2d"(%x) <{size = array<i64: 3, 5>, layout = "NCHW", method = "linear", coordinate_transformation_mode = "half_pixel", rounding_method = "", cubic_alpha = -5.000000e-01 : f64, cubic_exclude = 0 : i64, extrapolation_value = 0.000000e+00 : f64, scale = array<f64: 1.500000e+00, 1.600000e+00>}>
func.func @images(%x: tensor<1x8x2x3xf32>) -> (tensor<1x2x4x6xf32>, tensor<1x8x2x3xf32>, tensor<1x8x4x6xf32>, tensor<1x8x3x5xf32>) {
  %0 = relay.nn.depth_to_space %x {block_size = 2 : i64, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  %1 = relay.nn.space_to_depth %x {block_size = 1 : i64} : (tensor<1x8x2x3xf32>) -> tensor<1x8x2x3xf32>
  %2 = relay.image.resize2d %x {size = array<i64: 4, 6>, method = "nearest_neighbor", coordinate_transformation_mode = "asymmetric", rounding_method = "floor"} : (tensor<1x8x2x3xf32>) -> tensor<1x8x4x6xf32>
  %3 = relay.image.resize2d %x {size = array<i64: 3, 5>, scale = array<f64: 1.5, 1.6>} : (tensor<1x8x2x3xf32>) -> tensor<1x8x3x5xf32>
  func.return %0, %1, %2, %3 : tensor<1x2x4x6xf32>, tensor<1x8x2x3xf32>, tensor<1x8x4x6xf32>, tensor<1x8x3x5xf32>
}

// CHECK-LABEL: func.func @gather(
// CHECK-NEXT:    %0 = relay.gather %d, %ids {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT:    %1 = relay.gather %d, %ids32 : (tensor<3x4xf32>, tensor<5x4xi32>) -> tensor<5x4xf32>
// GENERIC-LABEL: sym_name = "gather"
// GENERIC:       "relay.gather"(%d, %ids32) <{axis = 0 : i64}> : (tensor<3x4xf32>, tensor<5x4xi32>) -> tensor<5x4xf32>
func.func @gather(%d: tensor<3x4xf32>, %ids: tensor<3x2xi64>, %ids32: tensor<5x4xi32>) -> (tensor<3x2xf32>, tensor<5x4xf32>) {
  %0 = relay.gather %d, %ids {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %1 = relay.gather %d, %ids32 {axis = 0 : i64} : (tensor<3x4xf32>, tensor<5x4xi32>) -> tensor<5x4xf32>
  func.return %0, %1 : tensor<3x2xf32>, tensor<5x4xf32>
}
