// RUN: byoc-opt %s -p byoc-fold-batch-norm --split-input-file | filecheck %s

// With epsilon 0: scale = gamma / sqrt(var) = [2, 1], shift = beta - mean * scale = [1, -1].

// conv2d -> batch_norm: the scale goes into the weight (one row per output
// channel), the shift becomes a bias_add along the channels.
func.func @conv(%x: tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32> {
  %w = relay.constant dense<[[[[1.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %gamma = relay.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %beta = relay.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = relay.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = relay.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = relay.nn.conv2d %x, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %1 = relay.nn.batch_norm %0, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x3x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x5xf32>
  func.return %1 : tensor<1x2x3x5xf32>
}

// CHECK-LABEL: func.func @conv(%x: tensor<1x1x3x5xf32>) -> tensor<1x2x3x5xf32> {
// CHECK-NEXT:    %w = relay.constant dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-NEXT:    %[[C:.*]] = relay.nn.conv2d %x, %w
// CHECK-NEXT:    %[[B:.*]] = relay.constant dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = relay.nn.bias_add %[[C]], %[[B]] : (tensor<1x2x3x5xf32>, tensor<2xf32>) -> tensor<1x2x3x5xf32>
// CHECK-NEXT:    func.return %[[Y]]

// -----

// An existing bias is scaled and shifted; dense's channels are its last axis.
func.func @dense_bias(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = relay.constant dense<1.0> : tensor<2x4xf32>
  %b = relay.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %gamma = relay.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %beta = relay.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = relay.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = relay.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = relay.nn.dense %x, %w : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  %1 = relay.nn.bias_add %0, %b {axis = -1 : i64} : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %2 = relay.nn.batch_norm %1, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %2 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @dense_bias(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
// CHECK-NEXT:    %w = relay.constant dense<{{\[}}[2.000000e+00, 2.000000e+00, 2.000000e+00, 2.000000e+00], [1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00]]> : tensor<2x4xf32>
// CHECK-NEXT:    %[[D:.*]] = relay.nn.dense %x, %w
// CHECK-NEXT:    %b = relay.constant dense<[3.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = relay.nn.bias_add %[[D]], %b {axis = -1 : i64}
// CHECK-NEXT:    func.return %[[Y]]

// -----

// Nothing to fold into (a function argument; a conv2d whose output has another
// user): a multiply and an add by constants shaped along the axis.
func.func @standalone(%x: tensor<1x2x3x5xf32>, %y: tensor<1x1x3x5xf32>) -> (tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>) {
  %w = relay.constant dense<1.0> : tensor<2x1x1x1xf32>
  %gamma = relay.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %beta = relay.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = relay.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = relay.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = relay.nn.batch_norm %x, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x3x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x5xf32>
  %1 = relay.nn.conv2d %y, %w : (tensor<1x1x3x5xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %2 = relay.nn.batch_norm %1, %gamma, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x3x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x5xf32>
  func.return %0, %1, %2 : tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>, tensor<1x2x3x5xf32>
}

// CHECK-LABEL: func.func @standalone
// CHECK:         %scale = relay.constant dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[M:.*]] = relay.multiply %x, %scale : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
// CHECK-NEXT:    %shift = relay.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}-1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[A:.*]] = relay.add %[[M]], %shift
// CHECK:         %[[C:.*]] = relay.nn.conv2d %y, %w
// CHECK:         %[[M2:.*]] = relay.multiply %[[C]], %{{.*}}
// CHECK:         %[[A2:.*]] = relay.add %[[M2]], %{{.*}}
// CHECK-NEXT:    func.return %[[A]], %[[C]], %[[A2]]

// -----

// Along the last axis the constants are 1-d; without scale/center, no gamma/beta.
func.func @last_axis(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %gamma = relay.constant dense<[7.0, 7.0]> : tensor<2xf32>
  %beta = relay.constant dense<[7.0, 7.0]> : tensor<2xf32>
  %mean = relay.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %var = relay.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %0 = relay.nn.batch_norm %x, %gamma, %beta, %mean, %var {axis = 1 : i64, epsilon = 0.0 : f32, center = false, scale = false} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @last_axis
// CHECK:         %scale = relay.constant dense<[1.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    relay.multiply %x, %scale
// CHECK-NEXT:    %shift = relay.constant dense<[0.000000e+00, -5.000000e-01]> : tensor<2xf32>

// -----

// Statistics that are not constants: left alone.
func.func @runtime_stats(%x: tensor<1x2x3x5xf32>, %var: tensor<2xf32>) -> tensor<1x2x3x5xf32> {
  %c = relay.constant dense<1.0> : tensor<2xf32>
  %0 = relay.nn.batch_norm %x, %c, %c, %c, %var : (tensor<1x2x3x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x5xf32>
  func.return %0 : tensor<1x2x3x5xf32>
}

// CHECK-LABEL: func.func @runtime_stats
// CHECK:         relay.nn.batch_norm %x
