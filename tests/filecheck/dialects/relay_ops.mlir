// RUN: byoc-opt %s | filecheck %s
// RUN: byoc-opt %s --print-op-generic | byoc-opt | filecheck %s
// RUN: byoc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every relay op in its custom form. Attributes are properties: the custom form
// lists them in the attr-dict (in declaration order, default values left out),
// the generic form as <{...}> with every default filled in.

// CHECK-LABEL: func.func @elementwise(
// CHECK-NEXT:    %0 = relay.maximum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = relay.minimum %0, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = relay.power %1, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = relay.abs %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = relay.log %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = relay.sqrt %4 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %6 = relay.rsqrt %5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %7 = relay.sigmoid %6 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %8 = relay.erf %7 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %9 = relay.clip %8 {a_min = -1.000000e+00 : f64, a_max = 6.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %10 = relay.clip %9 {a_min = 0.000000e+00 : f32, a_max = 0.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %10 : tensor<2x3xf32>

// GENERIC-LABEL: sym_name = "elementwise"
// GENERIC:       "relay.maximum"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// GENERIC:       "relay.erf"(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:       "relay.clip"(%{{.*}}) <{a_min = -1.000000e+00 : f64, a_max = 6.000000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %0 = relay.maximum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = relay.minimum %0, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = relay.power %1, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = relay.abs %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = relay.log %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = relay.sqrt %4 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = relay.rsqrt %5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = relay.sigmoid %6 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = relay.erf %7 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = relay.clip %8 {a_min = -1.0 : f64, a_max = 6.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = relay.clip %9 {a_max = 0.0 : f32, a_min = 0.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %10 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @linear(
// CHECK-NEXT:    %0 = relay.nn.dense %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %1 = relay.nn.dense %x, %w {units = 16 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %2 = relay.nn.bias_add %1, %bias : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %3 = relay.nn.bias_add %2, %bias {axis = -1 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %4 = relay.nn.batch_matmul %p, %q : (tensor<2x4x8xf32>, tensor<1x5x8xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT:    %5 = relay.nn.batch_matmul %p, %p {transpose_a = true, transpose_b = false} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
// CHECK-NEXT:    %6 = relay.nn.matmul %x, %m : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %7 = relay.nn.matmul %x, %w {units = 16 : i64, transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %3 : tensor<4x16xf32>

// GENERIC-LABEL: sym_name = "linear"
// GENERIC:       "relay.nn.dense"(%x, %w) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// GENERIC:       "relay.nn.dense"(%x, %w) <{units = 16 : i64}> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// GENERIC:       "relay.nn.bias_add"(%{{.*}}, %bias) <{axis = 1 : i64}> : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// GENERIC:       "relay.nn.batch_matmul"(%p, %q) <{transpose_a = false, transpose_b = true}> : (tensor<2x4x8xf32>, tensor<1x5x8xf32>) -> tensor<2x4x5xf32>
// GENERIC:       "relay.nn.matmul"(%x, %w) <{units = 16 : i64, transpose_a = false, transpose_b = true}> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %bias: tensor<16xf32>, %p: tensor<2x4x8xf32>, %q: tensor<1x5x8xf32>, %m: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = relay.nn.dense %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %1 = relay.nn.dense %x, %w {units = 16 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %2 = relay.nn.bias_add %1, %bias : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %3 = relay.nn.bias_add %2, %bias {axis = -1 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %4 = relay.nn.batch_matmul %p, %q : (tensor<2x4x8xf32>, tensor<1x5x8xf32>) -> tensor<2x4x5xf32>
  %5 = relay.nn.batch_matmul %p, %p {transpose_a = true, transpose_b = false} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  %6 = relay.nn.matmul %x, %m : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %7 = relay.nn.matmul %x, %w {transpose_b = true, units = 16 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  func.return %3 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @conv_pool(
// CHECK-NEXT:    %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %1 = relay.nn.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, channels = 4 : i64, kernel_size = array<i64: 3, 3>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %2 = relay.nn.conv2d %x, %dw {padding = array<i64: 2>, dilation = array<i64: 2, 2>, groups = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x8x8xf32>
// CHECK-NEXT:    %3 = relay.nn.max_pool2d %0 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %4 = relay.nn.max_pool2d %0 {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, ceil_mode = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %5 = relay.nn.avg_pool2d %0 {count_include_pad = true, pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %6 = relay.nn.avg_pool2d %0 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilation = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    %7 = relay.nn.global_avg_pool2d %3 : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    func.return %7 : tensor<1x4x1x1xf32>

// GENERIC-LABEL: sym_name = "conv_pool"
// GENERIC:       "relay.nn.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, data_layout = "NCHW", kernel_layout = "OIHW"}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// GENERIC:       "relay.nn.conv2d"(%x, %w) <{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, channels = 4 : i64, kernel_size = array<i64: 3, 3>, data_layout = "NCHW", kernel_layout = "OIHW"}>
// GENERIC:       "relay.nn.max_pool2d"(%0) <{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, layout = "NCHW", ceil_mode = false}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// GENERIC:       "relay.nn.avg_pool2d"(%0) <{count_include_pad = true, pool_size = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, layout = "NCHW", ceil_mode = false}>
// GENERIC:       "relay.nn.global_avg_pool2d"(%{{.*}}) <{layout = "NCHW"}> : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
func.func @conv_pool(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dw: tensor<6x1x3x3xf32>) -> tensor<1x4x1x1xf32> {
  %0 = relay.nn.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = relay.nn.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, channels = 4 : i64, kernel_size = array<i64: 3, 3>, data_layout = "NCHW", kernel_layout = "OIHW"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %2 = relay.nn.conv2d %x, %dw {padding = array<i64: 2>, dilation = array<i64: 2, 2>, groups = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x8x8xf32>
  %3 = relay.nn.max_pool2d %0 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %4 = relay.nn.max_pool2d %0 {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 1, 1>, ceil_mode = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %5 = relay.nn.avg_pool2d %0 {pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, count_include_pad = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %6 = relay.nn.avg_pool2d %0 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilation = array<i64: 2, 2>, layout = "NCHW"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x3x3xf32>
  %7 = relay.nn.global_avg_pool2d %3 : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
  func.return %7 : tensor<1x4x1x1xf32>
}

// CHECK-LABEL: func.func @conv_packed(
// CHECK-NEXT:    %0 = relay.nn.conv2d_packed %x, %w8 {padding = array<i64: 1, 1>, channels = 12 : i64, kernel_layout = "OIHW8o"} : (tensor<1x4x8x8xf32>, tensor<2x4x3x3x8xf32>) -> tensor<1x12x8x8xf32>
// CHECK-NEXT:    %1 = relay.nn.conv2d_packed %x, %w32 {strides = array<i64: 2, 2>, groups = 2 : i64, channels = 12 : i64, kernel_layout = "OIHW32o"} : (tensor<1x4x8x8xf32>, tensor<2x2x1x1x32xf32>) -> tensor<1x12x4x4xf32>
// CHECK-NEXT:    func.return %0 : tensor<1x12x8x8xf32>

// GENERIC-LABEL: sym_name = "conv_packed"
// GENERIC:       "relay.nn.conv2d_packed"(%x, %w8) <{strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, channels = 12 : i64, kernel_layout = "OIHW8o"}> : (tensor<1x4x8x8xf32>, tensor<2x4x3x3x8xf32>) -> tensor<1x12x8x8xf32>
func.func @conv_packed(%x: tensor<1x4x8x8xf32>, %w8: tensor<2x4x3x3x8xf32>, %w32: tensor<2x2x1x1x32xf32>) -> tensor<1x12x8x8xf32> {
  %0 = relay.nn.conv2d_packed %x, %w8 {padding = array<i64: 1, 1>, channels = 12 : i64, kernel_layout = "OIHW8o"} : (tensor<1x4x8x8xf32>, tensor<2x4x3x3x8xf32>) -> tensor<1x12x8x8xf32>
  %1 = relay.nn.conv2d_packed %x, %w32 {kernel_layout = "OIHW32o", channels = 12 : i64, groups = 2 : i64, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<2x2x1x1x32xf32>) -> tensor<1x12x4x4xf32>
  func.return %0 : tensor<1x12x8x8xf32>
}

// CHECK-LABEL: func.func @dense_packed(
// CHECK-NEXT:    %0 = relay.nn.dense_packed %x, %w {units = 40 : i64} : (tensor<2x3x16xf32>, tensor<2x16x32xf32>) -> tensor<2x3x40xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x3x40xf32>

// GENERIC-LABEL: sym_name = "dense_packed"
// GENERIC:       "relay.nn.dense_packed"(%x, %w) <{units = 40 : i64}> : (tensor<2x3x16xf32>, tensor<2x16x32xf32>) -> tensor<2x3x40xf32>
func.func @dense_packed(%x: tensor<2x3x16xf32>, %w: tensor<2x16x32xf32>) -> tensor<2x3x40xf32> {
  %0 = relay.nn.dense_packed %x, %w {units = 40 : i64} : (tensor<2x3x16xf32>, tensor<2x16x32xf32>) -> tensor<2x3x40xf32>
  func.return %0 : tensor<2x3x40xf32>
}

// CHECK-LABEL: func.func @normalization(
// CHECK-NEXT:    %0 = relay.nn.softmax %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %1 = relay.nn.softmax %0 {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %2 = relay.nn.log_softmax %1 {axis = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %3 = relay.nn.batch_norm %2, %c, %c, %c, %c : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %4 = relay.nn.batch_norm %3, %l, %l, %l, %l {axis = 2 : i64, epsilon = 1.000000e-03 : f32, center = false, scale = false} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %5 = relay.nn.layer_norm %4, %l, %l : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %6 = relay.nn.layer_norm %5, %c, %c {axis = 1 : i64, epsilon = 1.000000e-06 : f64, center = false} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %6 : tensor<2x3x4xf32>

// GENERIC-LABEL: sym_name = "normalization"
// GENERIC:       "relay.nn.softmax"(%x) <{axis = -1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// GENERIC:       "relay.nn.log_softmax"(%{{.*}}) <{axis = -2 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// GENERIC:       "relay.nn.batch_norm"(%{{.*}}, %c, %c, %c, %c) <{axis = 1 : i64, epsilon = 1.000000e-05 : f32, center = true, scale = true}>
// GENERIC:       "relay.nn.layer_norm"(%{{.*}}, %l, %l) <{axis = -1 : i64, epsilon = 1.000000e-05 : f32, center = true, scale = true}>
func.func @normalization(%x: tensor<2x3x4xf32>, %c: tensor<3xf32>, %l: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.nn.softmax %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = relay.nn.softmax %0 {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %2 = relay.nn.log_softmax %1 {axis = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = relay.nn.batch_norm %2, %c, %c, %c, %c : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %4 = relay.nn.batch_norm %3, %l, %l, %l, %l {axis = 2 : i64, epsilon = 1.000000e-03 : f32, center = false, scale = false} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %5 = relay.nn.layer_norm %4, %l, %l : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %6 = relay.nn.layer_norm %5, %c, %c {axis = 1 : i64, epsilon = 1.000000e-06 : f64, center = false} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %6 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @shapes(
// CHECK-NEXT:    %0 = relay.reshape %x {newshape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    %1 = relay.reshape %x {newshape = array<i64: -4, 1, 2, -2>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    %2 = relay.reshape %x {newshape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %3 = relay.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT:    %4 = relay.transpose %x {axes = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    %5 = relay.concatenate %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:    %6 = relay.concatenate %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %7 = relay.nn.batch_flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    %8 = relay.squeeze %o : (tensor<1x3x1xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %9 = relay.squeeze %o {axis = array<i64: -1>} : (tensor<1x3x1xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:    %10 = relay.expand_dims %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
// CHECK-NEXT:    %11 = relay.expand_dims %x {axis = -1 : i64, num_newaxis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1x1xf32>
// CHECK-NEXT:    func.return %2 : tensor<24xf32>

// GENERIC-LABEL: sym_name = "shapes"
// GENERIC:       "relay.reshape"(%x) <{newshape = array<i64: 0, -1>}> : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// GENERIC:       "relay.transpose"(%x) : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// GENERIC:       "relay.transpose"(%x) <{axes = array<i64: 0, 2, 1>}> : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// GENERIC:       "relay.concatenate"(%x, %y) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// GENERIC:       "relay.concatenate"(%x) <{axis = 0 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// GENERIC:       "relay.nn.batch_flatten"(%x) : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// GENERIC:       "relay.squeeze"(%o) : (tensor<1x3x1xf32>) -> tensor<3xf32>
// GENERIC:       "relay.expand_dims"(%x) <{axis = 1 : i64, num_newaxis = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %o: tensor<1x3x1xf32>) -> tensor<24xf32> {
  %0 = relay.reshape %x {newshape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %1 = relay.reshape %x {newshape = array<i64: -4, 1, 2, -2>} : (tensor<2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %2 = relay.reshape %x {newshape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %3 = relay.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %4 = relay.transpose %x {axes = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %5 = relay.concatenate %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  %6 = relay.concatenate %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %7 = relay.nn.batch_flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %8 = relay.squeeze %o : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %9 = relay.squeeze %o {axis = array<i64: -1>} : (tensor<1x3x1xf32>) -> tensor<1x3xf32>
  %10 = relay.expand_dims %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
  %11 = relay.expand_dims %x {axis = -1 : i64, num_newaxis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1x1xf32>
  func.return %2 : tensor<24xf32>
}

// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT:    %0 = relay.sum %x : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %1 = relay.sum %x {axis = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %2 = relay.mean %x {axis = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %3 = relay.max %x {axis = array<i64: 1>, exclude = true} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %0 : tensor<f32>

// GENERIC-LABEL: sym_name = "reductions"
// GENERIC:       "relay.sum"(%x) <{keepdims = false, exclude = false}> : (tensor<2x3x4xf32>) -> tensor<f32>
// GENERIC:       "relay.mean"(%x) <{axis = array<i64: 0, -1>, keepdims = false, exclude = false}> : (tensor<2x3x4xf32>) -> tensor<3xf32>
// GENERIC:       "relay.max"(%x) <{axis = array<i64: 1>, keepdims = false, exclude = true}> : (tensor<2x3x4xf32>) -> tensor<3xf32>
func.func @reductions(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %0 = relay.sum %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %1 = relay.sum %x {axis = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %2 = relay.mean %x {axis = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %3 = relay.max %x {exclude = true, axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<f32>
}

// Large values (over 100 elements) print as one hex string of the raw bytes.
// CHECK-LABEL: func.func @constants(
// CHECK-NEXT:    %0 = relay.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %1 = relay.constant dense<5.000000e-01> : tensor<3xf32>
// CHECK-NEXT:    %2 = relay.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %3 = relay.constant {note = "weights"} dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>
// CHECK-NEXT:    %4 = relay.constant dense<"0x000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42000090420000924200009442000096420000984200009A4200009C4200009E420000A0420000A2420000A4420000A6420000A8420000AA420000AC420000AE420000B0420000B2420000B4420000B6420000B8420000BA420000BC420000BE420000C0420000C2420000C4420000C6420000C842"> : tensor<101xf32>
// CHECK-NEXT:    func.return %0 : tensor<2x2xf32>

// GENERIC-LABEL: sym_name = "constants"
// GENERIC:       "relay.constant"() <{value = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
// GENERIC:       "relay.constant"() <{value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>}> {note = "weights"} : () -> tensor<2xf64>
// GENERIC:       "relay.constant"() <{value = dense<"0x000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42000090420000924200009442000096420000984200009A4200009C4200009E420000A0420000A2420000A4420000A6420000A8420000AA420000AC420000AE420000B0420000B2420000B4420000B6420000B8420000BA420000BC420000BE420000C0420000C2420000C4420000C6420000C842"> : tensor<101xf32>}> : () -> tensor<101xf32>
func.func @constants() -> tensor<2x2xf32> {
  %0 = relay.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %1 = relay.constant dense<0.5> : tensor<3xf32>
  %2 = relay.constant dense<1.0> : tensor<f32>
  %3 = relay.constant {note = "weights"} dense<[1.0, 2.0]> : tensor<2xf64>
  %4 = relay.constant dense<"0x000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42000090420000924200009442000096420000984200009A4200009C4200009E420000A0420000A2420000A4420000A6420000A8420000AA420000AC420000AE420000B0420000B2420000B4420000B6420000B8420000BA420000BC420000BE420000C0420000C2420000C4420000C6420000C842"> : tensor<101xf32>
  func.return %0 : tensor<2x2xf32>
}

// The generic form parses, and its properties come back.
// CHECK-LABEL: func.func @generic(
// CHECK-NEXT:    %0 = relay.nn.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
// CHECK-NEXT:    %1 = relay.constant dense<2.000000e+00> : tensor<1x1x1x1xf32>
func.func @generic(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "relay.nn.conv2d"(%x, %w) <{strides = array<i64: 2, 2>}> : (tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %1 = "relay.constant"() <{value = dense<2.0> : tensor<1x1x1x1xf32>}> : () -> tensor<1x1x1x1xf32>
  func.return %0 : tensor<1x1x2x2xf32>
}

// CHECK-LABEL: func.func @lrn(
// CHECK-NEXT:    %0 = relay.nn.lrn %x : (tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32>
// CHECK-NEXT:    %1 = relay.nn.lrn %0 {size = 4 : i64, axis = 3 : i64, bias = 1.000000e+00 : f32, alpha = 1.000000e-04 : f32, beta = 5.000000e-01 : f32} : (tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32>
// GENERIC-LABEL: sym_name = "lrn"
// GENERIC:       "relay.nn.lrn"(%x) <{size = 5 : i64, axis = 1 : i64, bias = 2.000000e+00 : f32, alpha = 1.000000e-05 : f32, beta = 7.500000e-01 : f32}>
func.func @lrn(%x: tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32> {
  %0 = relay.nn.lrn %x : (tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32>
  %1 = relay.nn.lrn %0 {size = 4 : i64, axis = 3 : i64, bias = 1.0 : f32, alpha = 1.0e-4 : f32, beta = 0.5 : f32} : (tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32>
  func.return %1 : tensor<1x6x2x3xf32>
}

// CHECK-LABEL: func.func @activations(
// CHECK-NEXT:    %0 = relay.sign %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = relay.round %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %2 = relay.nn.leaky_relu %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %3 = relay.nn.selu %2 {gamma = 2.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = relay.nn.gelu %3 {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %5 = relay.nn.shrink %4 {bias = 1.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %6 = relay.nn.prelu %5, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %6 : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "activations"
// GENERIC:       "relay.nn.leaky_relu"(%{{.*}}) <{alpha = 1.000000e-02 : f32}>
// GENERIC:       "relay.nn.gelu"(%{{.*}}) <{approximate = "tanh"}>
// GENERIC:       "relay.nn.prelu"(%{{.*}}, %s) <{axis = 1 : i64}>
func.func @activations(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.sign %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = relay.round %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = relay.nn.leaky_relu %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = relay.nn.selu %2 {gamma = 2.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = relay.nn.gelu %3 {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = relay.nn.shrink %4 {bias = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = relay.nn.prelu %5, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %6 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @more_reductions(
// CHECK-NEXT:    %0 = relay.min %x {axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %1 = relay.prod %0 {keepdims = true} : (tensor<2x4xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    %2 = relay.nn.instance_norm %x, %c, %c {epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
// GENERIC-LABEL: sym_name = "more_reductions"
// GENERIC:       "relay.min"(%x) <{axis = array<i64: 1>, keepdims = false, exclude = false}>
// GENERIC:       "relay.nn.instance_norm"(%x, %c, %c) <{axis = 1 : i64, epsilon = 1.000000e-03 : f32, center = true, scale = true}>
func.func @more_reductions(%x: tensor<2x3x4xf32>, %c: tensor<3xf32>) -> (tensor<1x1xf32>, tensor<2x3x4xf32>) {
  %0 = relay.min %x {axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %1 = relay.prod %0 {keepdims = true} : (tensor<2x4xf32>) -> tensor<1x1xf32>
  %2 = relay.nn.instance_norm %x, %c, %c {epsilon = 1.0e-3 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %1, %2 : tensor<1x1xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @windows_3d_and_transposed(
// CHECK-NEXT:    %0 = relay.nn.conv3d %x, %w {padding = array<i64: 1, 1, 1>} : (tensor<1x2x4x4x4xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x3x4x4x4xf32>
// CHECK-NEXT:    %1 = relay.nn.max_pool3d %0 {pool_size = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x2x2x2xf32>
// CHECK-NEXT:    %2 = relay.nn.avg_pool3d %1 {count_include_pad = true, pool_size = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1>} : (tensor<1x3x2x2x2xf32>) -> tensor<1x3x2x2x2xf32>
// CHECK-NEXT:    %3 = relay.nn.conv3d_transpose %2, %t {strides = array<i64: 2, 2, 2>, output_padding = array<i64: 1, 0, 1>} : (tensor<1x3x2x2x2xf32>, tensor<3x1x2x2x2xf32>) -> tensor<1x1x5x4x5xf32>
// CHECK-NEXT:    %4 = relay.nn.conv2d_transpose %p, %q {groups = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<4x1x2x2xf32>) -> tensor<1x2x4x4xf32>
// GENERIC-LABEL: sym_name = "windows_3d_and_transposed"
// GENERIC:       "relay.nn.conv3d"(%x, %w) <{strides = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64, data_layout = "NCDHW", kernel_layout = "OIDHW"}>
// GENERIC:       "relay.nn.conv2d_transpose"(%p, %q) <{strides = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 2 : i64, data_layout = "NCHW", kernel_layout = "IOHW", output_padding = array<i64: 0, 0>}>
func.func @windows_3d_and_transposed(%x: tensor<1x2x4x4x4xf32>, %w: tensor<3x2x3x3x3xf32>, %t: tensor<3x1x2x2x2xf32>, %p: tensor<1x4x3x3xf32>, %q: tensor<4x1x2x2xf32>) -> (tensor<1x1x5x4x5xf32>, tensor<1x2x4x4xf32>) {
  %0 = relay.nn.conv3d %x, %w {padding = array<i64: 1, 1, 1>} : (tensor<1x2x4x4x4xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x3x4x4x4xf32>
  %1 = relay.nn.max_pool3d %0 {pool_size = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<1x3x4x4x4xf32>) -> tensor<1x3x2x2x2xf32>
  %2 = relay.nn.avg_pool3d %1 {pool_size = array<i64: 3, 3, 3>, padding = array<i64: 1, 1, 1>, count_include_pad = true} : (tensor<1x3x2x2x2xf32>) -> tensor<1x3x2x2x2xf32>
  %3 = relay.nn.conv3d_transpose %2, %t {strides = array<i64: 2, 2, 2>, output_padding = array<i64: 1, 0, 1>} : (tensor<1x3x2x2x2xf32>, tensor<3x1x2x2x2xf32>) -> tensor<1x1x5x4x5xf32>
  %4 = relay.nn.conv2d_transpose %p, %q {groups = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<4x1x2x2xf32>) -> tensor<1x2x4x4xf32>
  func.return %3, %4 : tensor<1x1x5x4x5xf32>, tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @comparisons_and_logic(
// CHECK-NEXT:    %0 = relay.equal %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %1 = relay.not_equal %i, %i : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %2 = relay.less %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %3 = relay.less_equal %u, %u : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xi1>
// CHECK-NEXT:    %4 = relay.greater %0, %1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %5 = relay.greater_equal %y, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
// CHECK-NEXT:    %6 = relay.logical_and %2, %3 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %7 = relay.logical_or %6, %4 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %8 = relay.logical_xor %7, %5 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %9 = relay.logical_not %8 : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %10 = relay.add %i, %i : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %11 = relay.multiply %u, %u : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
// GENERIC-LABEL: sym_name = "comparisons_and_logic"
// GENERIC:       "relay.equal"(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// GENERIC:       "relay.logical_not"(%{{.*}}) : (tensor<2x3xi1>) -> tensor<2x3xi1>
func.func @comparisons_and_logic(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<2x3xi64>, %u: tensor<3xui8>) -> (tensor<2x3xi1>, tensor<2x3xi64>, tensor<3xui8>) {
  %0 = relay.equal %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = relay.not_equal %i, %i : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %2 = relay.less %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %3 = relay.less_equal %u, %u : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xi1>
  %4 = relay.greater %0, %1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %5 = relay.greater_equal %y, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %6 = relay.logical_and %2, %3 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %7 = relay.logical_or %6, %4 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %8 = relay.logical_xor %7, %5 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %9 = relay.logical_not %8 : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %10 = relay.add %i, %i : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %11 = relay.multiply %u, %u : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  func.return %9, %10, %11 : tensor<2x3xi1>, tensor<2x3xi64>, tensor<3xui8>
}

// CHECK-LABEL: func.func @arg_reductions(
// CHECK-NEXT:    %0 = relay.argmax %x {axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xi32>
// CHECK-NEXT:    %1 = relay.argmin %i {select_last_index = true, axis = array<i64: 0, 1>, keepdims = true} : (tensor<2x3xi64>) -> tensor<1x1xi32>
// GENERIC-LABEL: sym_name = "arg_reductions"
// GENERIC:       "relay.argmax"(%x) <{select_last_index = false, axis = array<i64: 1>, keepdims = false, exclude = false}>
func.func @arg_reductions(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi64>) -> (tensor<2x4xi32>, tensor<1x1xi32>) {
  %0 = relay.argmax %x {axis = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xi32>
  %1 = relay.argmin %i {axis = array<i64: 0, 1>, keepdims = true, select_last_index = true} : (tensor<2x3xi64>) -> tensor<1x1xi32>
  func.return %0, %1 : tensor<2x4xi32>, tensor<1x1xi32>
}
