'use strict';
// Loads the native addon (edgellm.node). Where from: $EDGELLM_NAPI_ADDON, else the default CMake
// build directory of this checkout (build/bindings/napi/edgellm.node).
const path = require('node:path');

const addonPath = process.env.EDGELLM_NAPI_ADDON ||
  path.join(__dirname, '..', '..', 'build', 'bindings', 'napi', 'edgellm.node');

module.exports = require(addonPath);
