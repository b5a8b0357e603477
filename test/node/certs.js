// SPDX-License-Identifier: Apache-2.0
// certs.js - test certificates made with openssl in a directory: a
// self-signed CA, and leaves it signs (the tests of TLS listeners).
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

// The makers for dir: file(name) its path, read(name) its bytes,
// ca(name) NAME.crt and NAME.key self-signed, leaf(name, cn, caName, ext)
// NAME.crt and NAME.key with subject CN and the extensions ext.
function certs(dir) {
  const file = (name) => path.join(dir, name);
  const openssl = (args) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8', timeout: 20000 });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.error || r.stderr}`);
  };
  return {
    file,
    read: (name) => fs.readFileSync(file(name)),
    ca(name) {
      openssl(['req', '-x509', ...newKey, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2',
        '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    },
    leaf(name, cn, caName, ext) {
      fs.writeFileSync(file(`${name}.ext`), `basicConstraints = CA:FALSE\n${ext}\n`);
      openssl(['req', ...newKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
      openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.crt`, '-CAkey', `${caName}.key`,
        '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`]);
    },
  };
}

module.exports = { certs };
