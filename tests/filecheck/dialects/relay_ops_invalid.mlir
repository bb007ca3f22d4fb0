// RUN: byoc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// One case per verifier error of the relay ops beyond the elementwise ones
// (those are in relay_invalid.mlir).

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.clip %a {a_min = 6.0 : f32, a_max = 0.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:7:3: error: 'relay.clip': a_min (6.0) must not exceed a_max (0.0)

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.bias_add %a, %b {axis = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:15:3: error: 'relay.nn.bias_add': axis 2 is out of range for rank 2

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.bias_add %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:23:3: error: 'relay.nn.bias_add': bias has shape [2] but data has 3 elements along axis 1

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf64>) -> tensor<2x3xf32> {
  %0 = relay.nn.bias_add %a, %b : (tensor<2x3xf32>, tensor<3xf64>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:31:3: error: 'relay.nn.bias_add': bias has element type f64 but data has f32

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<5x4xf32>) -> tensor<2x5xf32> {
  %0 = relay.nn.dense %a, %b : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK: relay_ops_invalid.mlir:39:3: error: 'relay.nn.dense': data has 3 input features but weight expects 4

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> tensor<2x5xf32> {
  %0 = relay.nn.dense %a, %b {units = 4 : i64} : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK: relay_ops_invalid.mlir:47:3: error: 'relay.nn.dense': units=4 does not match the weight's 5 rows

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<5x3x1xf32>) -> tensor<2x5xf32> {
  %0 = relay.nn.dense %a, %b : (tensor<2x3xf32>, tensor<5x3x1xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK: relay_ops_invalid.mlir:55:3: error: 'relay.nn.dense': weight must have rank 2, got shape [5, 3, 1]

// -----

func.func @main(%a: tensor<f32>, %b: tensor<5x3xf32>) -> tensor<5xf32> {
  %0 = relay.nn.dense %a, %b : (tensor<f32>, tensor<5x3xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}
// CHECK: relay_ops_invalid.mlir:63:3: error: 'relay.nn.dense': data must have rank at least 1, got a scalar

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.dense %a, %b : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:71:3: error: 'relay.nn.dense': result type tensor<2x3xf32> does not match the inferred type tensor<2x5xf32>

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %0 = relay.nn.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK: relay_ops_invalid.mlir:79:3: error: 'relay.nn.matmul': tensor_a has reduction size 3 but tensor_b has 4 (transpose_a=False, transpose_b=False)

// -----

func.func @main(%a: tensor<3xf32>, %b: tensor<3x5xf32>) -> tensor<5xf32> {
  %0 = relay.nn.matmul %a, %b {transpose_a = true} : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}
// CHECK: relay_ops_invalid.mlir:87:3: error: 'relay.nn.matmul': tensor_a has too small a rank: shape [3]

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<1x3x5xf32>) -> tensor<2x5xf32> {
  %0 = relay.nn.matmul %a, %b : (tensor<2x3xf32>, tensor<1x3x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK: relay_ops_invalid.mlir:95:3: error: 'relay.nn.matmul': tensor_b must have rank 2, got shape [1, 3, 5]

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %0 = relay.nn.matmul %a, %b {units = 4 : i64} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// CHECK: relay_ops_invalid.mlir:103:3: error: 'relay.nn.matmul': units=4 does not match the output size 5

// -----

func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<3x5x4xf32>) -> tensor<2x3x5xf32> {
  %0 = relay.nn.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x5x4xf32>) -> tensor<2x3x5xf32>
  func.return %0 : tensor<2x3x5xf32>
}
// CHECK: relay_ops_invalid.mlir:111:3: error: 'relay.nn.batch_matmul': batch sizes 2 and 3 do not broadcast

// -----

func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.nn.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}
// CHECK: relay_ops_invalid.mlir:119:3: error: 'relay.nn.batch_matmul': x has reduction size 4 but y has 5 (transpose_a=False, transpose_b=True)

// -----

func.func @main(%a: tensor<3x4xf32>, %b: tensor<2x5x4xf32>) -> tensor<2x3x5xf32> {
  %0 = relay.nn.batch_matmul %a, %b : (tensor<3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  func.return %0 : tensor<2x3x5xf32>
}
// CHECK: relay_ops_invalid.mlir:127:3: error: 'relay.nn.batch_matmul': x must have rank 3, got shape [3, 4]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b : (tensor<1x3x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:135:3: error: 'relay.nn.conv2d': data has 3 channels but weight expects 4 (groups=1)

// -----

func.func @main(%a: tensor<1x4x8x8xf32>, %b: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:143:3: error: 'relay.nn.conv2d': data has 4 channels but weight expects 2 (groups=2)

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {groups = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:151:3: error: 'relay.nn.conv2d': data has 3 channels, which groups=2 does not divide

// -----

func.func @main(%a: tensor<1x4x8x8xf32>, %b: tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  func.return %0 : tensor<1x3x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:159:3: error: 'relay.nn.conv2d': weight has 3 output channels, which groups=2 does not divide

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {groups = 0 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:167:3: error: 'relay.nn.conv2d': groups must be positive, got 0

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {strides = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:175:3: error: 'relay.nn.conv2d': strides must be positive, got [0, 1]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {strides = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:183:3: error: 'relay.nn.conv2d': strides must have 2 values, got [1, 1, 1]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {dilation = array<i64: 1, -1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:191:3: error: 'relay.nn.conv2d': dilation must be positive, got [1, -1]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = relay.nn.conv2d %a, %b {padding = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: relay_ops_invalid.mlir:199:3: error: 'relay.nn.conv2d': padding must have 1, 2 or 4 values (top, left, bottom, right), got [1, 1, 1]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %0 = relay.nn.conv2d %a, %b {padding = array<i64: -1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %0 : tensor<1x4x4x4xf32>
}
// CHECK: relay_ops_invalid.mlir:207:3: error: 'relay.nn.conv2d': padding must be non-negative, got [-1]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {channels = 8 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:215:3: error: 'relay.nn.conv2d': channels=8 does not match the weight's 4 output channels

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {kernel_size = array<i64: 5, 5>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:223:3: error: 'relay.nn.conv2d': kernel_size [5, 5] does not match the weight's kernel [3, 3]

// -----

func.func @main(%a: tensor<1x3x2x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32> {
  %0 = relay.nn.conv2d %a, %b : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  func.return %0 : tensor<1x4x1x6xf32>
}
// CHECK: relay_ops_invalid.mlir:231:3: error: 'relay.nn.conv2d': the kernel height window (3 with dilation) does not fit the padded input (2)

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {data_layout = "NHWC"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:239:3: error: 'relay.nn.conv2d': data_layout "NHWC" is not supported (only "NCHW")

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {kernel_layout = "HWIO"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:247:3: error: 'relay.nn.conv2d': kernel_layout "HWIO" is not supported (only "OIHW")

// -----

func.func @main(%a: tensor<3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32>
  func.return %0 : tensor<4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:255:3: error: 'relay.nn.conv2d': data (NCHW) must have rank 4, got shape [3, 8, 8]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {padding = array<i64: 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:263:3: error: 'relay.nn.conv2d': result type tensor<1x4x6x6xf32> does not match the inferred type tensor<1x4x8x8xf32>

// -----

func.func @main(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = relay.nn.conv2d %a, %b {strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
// CHECK: relay_ops_invalid.mlir:271:3
// CHECK: [1 : i64, 1 : i64] should be of base attribute array

// -----

func.func @main(%a: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %0 = relay.nn.max_pool2d %a {pool_size = array<i64: 0, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}
// CHECK: relay_ops_invalid.mlir:280:3: error: 'relay.nn.max_pool2d': pool_size must be positive, got [0, 2]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  %0 = relay.nn.max_pool2d %a {pool_size = array<i64: 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}
// CHECK: relay_ops_invalid.mlir:288:3: error: 'relay.nn.max_pool2d': pool_size must have 2 values, got [2]

// -----

func.func @main(%a: tensor<1x3x8x8xf32>) -> tensor<1x3x3x3xf32> {
  %0 = relay.nn.avg_pool2d %a {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x3x3xf32>
  func.return %0 : tensor<1x3x3x3xf32>
}
// CHECK: relay_ops_invalid.mlir:296:3: error: 'relay.nn.avg_pool2d': result type tensor<1x3x3x3xf32> does not match the inferred type tensor<1x3x4x4xf32>

// -----

func.func @main(%a: tensor<1x3x2x8xf32>) -> tensor<1x3x1x6xf32> {
  %0 = relay.nn.avg_pool2d %a {pool_size = array<i64: 3, 3>} : (tensor<1x3x2x8xf32>) -> tensor<1x3x1x6xf32>
  func.return %0 : tensor<1x3x1x6xf32>
}
// CHECK: relay_ops_invalid.mlir:304:3: error: 'relay.nn.avg_pool2d': the pool height window (3 with dilation) does not fit the padded input (2)

// -----

func.func @main(%a: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %0 = relay.nn.avg_pool2d %a {layout = "NHWC"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  func.return %0 : tensor<1x3x8x8xf32>
}
// CHECK: relay_ops_invalid.mlir:312:3: error: 'relay.nn.avg_pool2d': layout "NHWC" is not supported (only "NCHW")

// -----

func.func @main(%a: tensor<3x8x8xf32>) -> tensor<3x1x1xf32> {
  %0 = relay.nn.global_avg_pool2d %a : (tensor<3x8x8xf32>) -> tensor<3x1x1xf32>
  func.return %0 : tensor<3x1x1xf32>
}
// CHECK: relay_ops_invalid.mlir:320:3: error: 'relay.nn.global_avg_pool2d': data (NCHW) must have rank 4, got shape [3, 8, 8]

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.softmax %a {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:328:3: error: 'relay.nn.softmax': axis 3 is out of range for rank 2

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.log_softmax %a {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:336:3: error: 'relay.nn.log_softmax': axis -3 is out of range for rank 2

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<4xf32>, %c: tensor<3xf32>, %d: tensor<3xf32>, %e: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.batch_norm %a, %b, %c, %d, %e : (tensor<2x3xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:344:3: error: 'relay.nn.batch_norm': gamma has shape [4] but data has 3 elements along axis 1

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<3xf32>, %d: tensor<3xf32>, %e: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.batch_norm %a, %b, %c, %d, %e : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x1xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:352:3: error: 'relay.nn.batch_norm': moving_var has shape [3, 1] but data has 3 elements along axis 1

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<3xf32>, %d: tensor<3xf32>, %e: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.batch_norm %a, %b, %c, %d, %e {epsilon = -1.0 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:360:3: error: 'relay.nn.batch_norm': epsilon must be non-negative, got -1.0

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<3xf32>, %d: tensor<3xf32>, %e: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.batch_norm %a, %b, %c, %d, %e {axis = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:368:3: error: 'relay.nn.batch_norm': axis 2 is out of range for rank 2

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.layer_norm %a, %b, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:376:3: error: 'relay.nn.layer_norm': beta has shape [2] but data has 3 elements along axis 1

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<2xf32>, %c: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.layer_norm %a, %b, %c {axis = 0 : i64, epsilon = -1.0e-05 : f64} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:384:3: error: 'relay.nn.layer_norm': epsilon must be non-negative, got -1e-05

// -----

func.func @main(%a: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = relay.reshape %a {newshape = array<i64: -1, -1>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  func.return %0 : tensor<24xf32>
}
// CHECK: relay_ops_invalid.mlir:392:3: error: 'relay.reshape': newshape [-1, -1] has more than one -1

// -----

func.func @main(%a: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = relay.reshape %a {newshape = array<i64: 5, -1>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  func.return %0 : tensor<24xf32>
}
// CHECK: relay_ops_invalid.mlir:400:3: error: 'relay.reshape': newshape [5, -1]: cannot infer the -1 for data [2, 3, 4] (24 elements)

// -----

func.func @main(%a: tensor<2x3x4xf32>) -> tensor<5x5xf32> {
  %0 = relay.reshape %a {newshape = array<i64: 5, 5>} : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  func.return %0 : tensor<5x5xf32>
}
// CHECK: relay_ops_invalid.mlir:408:3: error: 'relay.reshape': newshape [5, 5] gives [5, 5] (25 elements) but data [2, 3, 4] has 24 elements

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = relay.reshape %a {newshape = array<i64: 1, 1, 0, 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}
// CHECK: relay_ops_invalid.mlir:416:3: error: 'relay.reshape': newshape [1, 1, 0, 6]: 0 at position 2 copies a dimension that data [2, 3] does not have

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = relay.reshape %a {newshape = array<i64: -5>} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}
// CHECK: relay_ops_invalid.mlir:424:3: error: 'relay.reshape': newshape [-5] has the unsupported value -5 (sizes are positive; 0, -1, -2, -3, -4 are special)

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = relay.reshape %a {newshape = array<i64: 2, -3>} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}
// CHECK: relay_ops_invalid.mlir:432:3: error: 'relay.reshape': newshape [2, -3]: -3 at position 1 needs two dimensions of data [2, 3] to merge

// -----

func.func @main(%a: tensor<6xf32>) -> tensor<6xf32> {
  %0 = relay.reshape %a {newshape = array<i64: -4, 4, -1>} : (tensor<6xf32>) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}
// CHECK: relay_ops_invalid.mlir:440:3: error: 'relay.reshape': newshape [-4, 4, -1]: -4 at position 0 cannot split dimension 6 into 4 x -1

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = relay.reshape %a {newshape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}
// CHECK: relay_ops_invalid.mlir:448:3: error: 'relay.reshape': result type tensor<6xf32> does not match the inferred type tensor<3x2xf32>

// -----

func.func @main(%a: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.transpose %a {axes = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}
// CHECK: relay_ops_invalid.mlir:456:3: error: 'relay.transpose': axes [0, 1] must have one entry per dimension (3)

// -----

func.func @main(%a: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.transpose %a {axes = array<i64: 0, 1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}
// CHECK: relay_ops_invalid.mlir:464:3: error: 'relay.transpose': axes [0, 1, -2] repeats an axis

// -----

func.func @main(%a: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = relay.transpose %a {axes = array<i64: 0, 1, 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}
// CHECK: relay_ops_invalid.mlir:472:3: error: 'relay.transpose': axis 3 is out of range for rank 3

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  %0 = relay.concatenate %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}
// CHECK: relay_ops_invalid.mlir:480:3: error: 'relay.concatenate': input 1 has shape [3, 3], which does not match input 0 [2, 3] outside axis 1

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %0 = relay.concatenate %a, %b {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return %0 : tensor<2x6xf32>
}
// CHECK: relay_ops_invalid.mlir:488:3: error: 'relay.concatenate': axis 2 is out of range for rank 2

// -----

func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf64>) -> tensor<4x3xf32> {
  %0 = relay.concatenate %a, %b : (tensor<2x3xf32>, tensor<2x3xf64>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
// CHECK: relay_ops_invalid.mlir:496:3: error: 'relay.concatenate': input 1 has element type f64 but input 0 has f32

// -----

func.func @main() -> tensor<2xf32> {
  %0 = "relay.concatenate"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: relay_ops_invalid.mlir:504:3: error: 'relay.concatenate': needs at least one input

// -----

func.func @main(%a: tensor<f32>) -> tensor<1xf32> {
  %0 = relay.nn.batch_flatten %a : (tensor<f32>) -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}
// CHECK: relay_ops_invalid.mlir:512:3: error: 'relay.nn.batch_flatten': data must have rank at least 1, got a scalar

// -----

func.func @main(%a: tensor<1x3x1xf32>) -> tensor<1x1xf32> {
  %0 = relay.squeeze %a {axis = array<i64: 1>} : (tensor<1x3x1xf32>) -> tensor<1x1xf32>
  func.return %0 : tensor<1x1xf32>
}
// CHECK: relay_ops_invalid.mlir:520:3: error: 'relay.squeeze': cannot squeeze axis 1 of size 3

// -----

func.func @main(%a: tensor<1x3x1xf32>) -> tensor<3x1xf32> {
  %0 = relay.squeeze %a {axis = array<i64: 0, -3>} : (tensor<1x3x1xf32>) -> tensor<3x1xf32>
  func.return %0 : tensor<3x1xf32>
}
// CHECK: relay_ops_invalid.mlir:528:3: error: 'relay.squeeze': axis [0, -3] repeats an axis

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  %0 = relay.expand_dims %a {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  func.return %0 : tensor<2x3x1xf32>
}
// CHECK: relay_ops_invalid.mlir:536:3: error: 'relay.expand_dims': axis 3 is out of range for rank 2 (+1)

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = relay.expand_dims %a {axis = 0 : i64, num_newaxis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:544:3: error: 'relay.expand_dims': num_newaxis must be non-negative, got -1

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.sum %a {axis = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: relay_ops_invalid.mlir:552:3: error: 'relay.sum': axis 2 is out of range for rank 2

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.mean %a {axis = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: relay_ops_invalid.mlir:560:3: error: 'relay.mean': axis [1, -1] repeats an axis

// -----

func.func @main(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = relay.max %a {axis = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: relay_ops_invalid.mlir:568:3: error: 'relay.max': result type tensor<2xf32> does not match the inferred type tensor<2x1xf32>

// -----

func.func @main() -> tensor<3xf32> {
  %0 = "relay.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
// CHECK: relay_ops_invalid.mlir:576:3: error: 'relay.constant': result type tensor<3xf32> does not match the value's type tensor<2xf32>

// -----

func.func @main() -> tensor<2xi4> {
  %0 = relay.constant dense<[1, 2]> : tensor<2xi4>
  func.return %0 : tensor<2xi4>
}
// CHECK: relay_ops_invalid.mlir:584:3: error: 'relay.constant': value must have a float, i1 or 8- to 64-bit integer element type, got i4

// -----

func.func @main() -> tensor<f32> {
  %0 = relay.constant 1.0 : f32
  func.return %0 : tensor<f32>
}
// CHECK: relay_ops_invalid.mlir:592:23
// CHECK: 'relay.constant': expected a dense<...> or dense_resource<...> value, got 1.000000e+00 : f32

// -----

func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = relay.nn.gelu %x {approximate = "erf"} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
// CHECK: relay_ops_invalid.mlir:601:3: error: 'relay.nn.gelu': approximate "erf" is not one of "none", "tanh"

// -----

func.func @main(%x: tensor<2x3xf32>, %a: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = relay.nn.prelu %x, %a : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: relay_ops_invalid.mlir:609:3: error: 'relay.nn.prelu': alpha has shape [2] but data has 3 elements along axis 1

// -----

func.func @main(%x: tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32> {
  %0 = relay.nn.lrn %x {size = 0 : i64} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return %0 : tensor<1x3x2x2xf32>
}
// CHECK: relay_ops_invalid.mlir:617:3: error: 'relay.nn.lrn': size must be positive, got 0

// -----

func.func @main(%x: tensor<1x2x1x1xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x1x1xf32> {
  %0 = relay.nn.conv2d_transpose %x, %w {padding = array<i64: 1>} : (tensor<1x2x1x1xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  func.return %0 : tensor<1x2x1x1xf32>
}
// CHECK: relay_ops_invalid.mlir:625:3: error: 'relay.nn.conv2d_transpose': the output would have -1 elements along the height (the padding removes more than the transposed convolution makes)

// -----

func.func @main(%x: tensor<1x2x3x3x3xf32>) -> tensor<1x2x1x1x1xf32> {
  %0 = relay.nn.max_pool3d %x {pool_size = array<i64: 3, 3, 3>, padding = array<i64: 1, 1>} : (tensor<1x2x3x3x3xf32>) -> tensor<1x2x1x1x1xf32>
  func.return %0 : tensor<1x2x1x1x1xf32>
}
// CHECK: relay_ops_invalid.mlir:633:3: error: 'relay.nn.max_pool3d': padding must have 1, 3 or 6 values (front, top, left, back, bottom, right), got [1, 1]

// -----

func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<1x4x3x3x8xf32>) -> tensor<1x9x3x3xf32> {
  %0 = relay.nn.conv2d_packed %x, %w {channels = 9 : i64, kernel_layout = "OIHW8o"} : (tensor<1x4x5x5xf32>, tensor<1x4x3x3x8xf32>) -> tensor<1x9x3x3xf32>
  func.return %0 : tensor<1x9x3x3xf32>
}
// CHECK: relay_ops_invalid.mlir:641:3: error: 'relay.nn.conv2d_packed': weight has shape [1, 4, 3, 3, 8]; 9 channels in groups=1 packed as OIHW8o have [2, 4, 3, 3, 8]

// -----

func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<1x4x3x3x4xf32>) -> tensor<1x4x3x3xf32> {
  %0 = relay.nn.conv2d_packed %x, %w {channels = 4 : i64, kernel_layout = "OIHW4o"} : (tensor<1x4x5x5xf32>, tensor<1x4x3x3x4xf32>) -> tensor<1x4x3x3xf32>
  func.return %0 : tensor<1x4x3x3xf32>
}
// CHECK: relay_ops_invalid.mlir:649:3: error: 'relay.nn.conv2d_packed': kernel_layout "OIHW4o" is not one of "OIHW8o", "OIHW32o", "winograd8o", "winograd4x4_8o"

// -----

func.func @main(%a: tensor<3x0xf32>) -> tensor<3xi32> {
  %0 = relay.argmax %a {axis = array<i64: 1>} : (tensor<3x0xf32>) -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}
// CHECK: relay_ops_invalid.mlir:657:3: error: 'relay.argmax': the reduced axes hold no elements: there is no extreme

// -----

func.func @main(%a: tensor<3x4xf32>) -> tensor<3xi64> {
  %0 = relay.argmin %a {axis = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}
// CHECK: relay_ops_invalid.mlir:665:3: error: 'relay.argmin': result type tensor<3xi64> does not match the inferred type tensor<3xi32>

// -----

func.func @main(%x: tensor<3x16xf32>, %w: tensor<1x16x32xf32>) -> tensor<3x40xf32> {
  %0 = relay.nn.dense_packed %x, %w {units = 40 : i64} : (tensor<3x16xf32>, tensor<1x16x32xf32>) -> tensor<3x40xf32>
  func.return %0 : tensor<3x40xf32>
}
// CHECK: relay_ops_invalid.mlir:673:3: error: 'relay.nn.dense_packed': weight has shape [1, 16, 32]; units=40 packed have [2, K, 32]

// -----

func.func @main(%x: tensor<3x15xf32>, %w: tensor<1x16x32xf32>) -> tensor<3x20xf32> {
  %0 = relay.nn.dense_packed %x, %w {units = 20 : i64} : (tensor<3x15xf32>, tensor<1x16x32xf32>) -> tensor<3x20xf32>
  func.return %0 : tensor<3x20xf32>
}
// CHECK: relay_ops_invalid.mlir:681:3: error: 'relay.nn.dense_packed': data has 15 input features but weight expects 16
