#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sim_tls
short_description: A self-signed CA and serving certificates for the sim platform's webhook servers
version_added: 0.1.0
author:
  - gpulab.kai_hami contributors (@gpulab)
description:
  - Keeps a CA (C(ca.crt), C(ca.key)) in O(path) and, for each entry of O(servers), a serving
    certificate signed by it in C(<path>/<server>/tls.crt) and C(tls.key) - the file names
    controller-runtime's webhook server reads. The sim platform registers its local webhook
    servers with C(url:) and this CA as C(caBundle).
  - Idempotent. A certificate is issued again when it is missing, does not match the CA or its
    names, or ends within 30 days. A new CA re-issues every server certificate.
attributes:
  check_mode:
    support: full
    details: Reports whether a certificate would be issued, and writes nothing.
  diff_mode:
    support: none
extends_documentation_fragment:
  - gpulab.kai_hami.attributes
options:
  path:
    description: Directory of the CA and the server certificates. Created when missing.
    type: path
    required: true
  common_name:
    description: The CA's common name (one CA per cluster).
    type: str
    required: true
  servers:
    description: Server certificates to keep, each named after its directory.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Directory name under O(path) (letters, digits, C(.), C(_), C(-)).
        type: str
        required: true
      names:
        description: IP addresses and DNS names the certificate is for.
        type: list
        elements: str
        default: ['127.0.0.1', 'localhost']
      link:
        description:
          - A symbolic link to the server's certificate directory, made (with its parent
            directories) where a program looks for its certificates, e.g. controller-runtime's
            C($TMPDIR/k8s-webhook-server/serving-certs). A link elsewhere is replaced; anything
            else at that path is refused.
        type: path
requirements:
  - cryptography (a dependency of ansible-core)
"""

EXAMPLES = r"""
- name: CA and certificates for KAI's webhook servers on the sim
  gpulab.kai_hami.sim_tls:
    path: ~/.cache/gpulab-kai-hami/sim/kai-hami-test/tls
    common_name: gpulab.kai_hami sim kai-hami-test
    servers:
      - name: admission
      - name: queue-controller
  register: tls

- name: Use the CA in a webhook configuration
  ansible.builtin.debug:
    msg: "{{ tls.ca_bundle }}"
"""

RETURN = r"""
ca_file:
  description: Path of the CA certificate.
  returned: always
  type: str
  sample: /root/.cache/gpulab-kai-hami/sim/kai-hami-test/tls/ca.crt
ca_bundle:
  description:
    - The CA certificate, base64-encoded PEM, as a webhook configuration's C(caBundle) takes it.
    - Empty in check mode when the CA does not exist yet.
  returned: always
  type: str
  sample: LS0tLS1CRUdJTi...
servers:
  description: Per server, the directory holding C(tls.crt) and C(tls.key).
  returned: always
  type: dict
  sample: {"admission": "/root/.cache/gpulab-kai-hami/sim/kai-hami-test/tls/admission"}
"""

import base64
import os
import re

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpulab.kai_hami.plugins.module_utils import sim_tls

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            common_name=dict(type="str", required=True),
            servers=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=dict(type="str", required=True),
                    names=dict(type="list", elements="str", default=["127.0.0.1", "localhost"]),
                    link=dict(type="path"),
                ),
            ),
        ),
        supports_check_mode=True,
    )
    if sim_tls.CRYPTOGRAPHY_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("cryptography"), exception=sim_tls.CRYPTOGRAPHY_IMPORT_ERROR)
    params = module.params
    for index, server in enumerate(params["servers"]):
        if not NAME.match(server["name"]):
            module.fail_json(msg="servers[%d].name %r must be letters, digits, '.', '_' or '-'" % (index, server["name"]))
        if not server["names"]:
            module.fail_json(msg="servers[%d].names must list at least one IP address or DNS name" % index)
        if server["link"] and os.path.exists(server["link"]) and not os.path.islink(server["link"]):
            module.fail_json(msg="servers[%d].link %s exists and is not a symbolic link" % (index, server["link"]))

    path, check = params["path"], module.check_mode
    if not check and not os.path.isdir(path):
        os.makedirs(path, 0o700)
    ca_cert, ca_key, changed = sim_tls.ensure_ca(path, params["common_name"], check=check)
    directories = {}
    for index, server in enumerate(params["servers"]):
        changed = sim_tls.ensure_server(path, server["name"], server["names"], ca_cert, ca_key, check=check) or changed
        directories[server["name"]] = os.path.join(path, server["name"])
        if server["link"]:
            try:
                changed = sim_tls.ensure_link(server["link"], directories[server["name"]], check=check) or changed
            except ValueError as error:
                module.fail_json(msg="servers[%d].link: %s" % (index, error))
    bundle = ""
    if ca_cert is not None:
        with open(os.path.join(path, "ca.crt"), "rb") as handle:
            bundle = base64.b64encode(handle.read()).decode("ascii")
    module.exit_json(changed=changed, ca_file=os.path.join(path, "ca.crt"), ca_bundle=bundle, servers=directories)


if __name__ == "__main__":
    main()
