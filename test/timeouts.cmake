# SPDX-License-Identifier: Apache-2.0
# Each test's ctest timeout: its slowest run in a make test (the gcc, ASan,
# TSan and build-type trees) times five, at least 120 s. Measured, not
# guessed: made by scripts/test-timeouts.sh from a make test's output
# (2026-12-06, 2 cores). Included by each folder that
# registers tests, after them; a test not here keeps the timeout it was
# registered with.
# isolate.sh kills a test 15 s before ctest would (PROCCTL_TEST_TIMEOUT).
macro(procctl_timeout name seconds)
  if(TEST ${name})
    math(EXPR _inside "${seconds} - 15")
    set_tests_properties(${name} PROPERTIES TIMEOUT ${seconds})
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "PROCCTL_TEST_TIMEOUT=${_inside}")
  endif()
endmacro()
procctl_timeout(abi 120) # slowest: 0.75 s
procctl_timeout(agent_only 120) # slowest: 16.07 s
procctl_timeout(calls 120) # slowest: 10.80 s
procctl_timeout(chart 120) # slowest: 19.44 s
procctl_timeout(debs 580) # slowest: 115.91 s
procctl_timeout(demo 120) # slowest: 14.17 s
procctl_timeout(doc_agent_library 120) # slowest: 0.38 s
procctl_timeout(doc_alerts 120) # slowest: 5.40 s
procctl_timeout(doc_api 120) # slowest: 3.34 s
procctl_timeout(doc_building 261) # slowest: 52.01 s
procctl_timeout(doc_consumer_schemas 120) # slowest: 0.19 s
procctl_timeout(doc_daemon 120) # slowest: 2.86 s
procctl_timeout(doc_gpu 120) # slowest: 3.83 s
procctl_timeout(doc_hosts 120) # slowest: 0.04 s
procctl_timeout(doc_internals 120) # slowest: 0.04 s
procctl_timeout(doc_kubernetes 120) # slowest: 0.57 s
procctl_timeout(doc_links 120) # slowest: 0.49 s
procctl_timeout(doc_procctl_1 120) # slowest: 4.08 s
procctl_timeout(doc_procctl_node_8 120) # slowest: 0.98 s
procctl_timeout(doc_process_side 120) # slowest: 6.46 s
procctl_timeout(doc_security 120) # slowest: 0.04 s
procctl_timeout(fuzz_agent 120) # slowest: 0.69 s
procctl_timeout(fuzz_base64 120) # slowest: 0.56 s
procctl_timeout(fuzz_desired 120) # slowest: 1.47 s
procctl_timeout(fuzz_elfnote 120) # slowest: 1.91 s
procctl_timeout(fuzz_httpbody 120) # slowest: 0.68 s
procctl_timeout(fuzz_kubeevent 120) # slowest: 1.69 s
procctl_timeout(fuzz_kubelist 120) # slowest: 1.83 s
procctl_timeout(fuzz_labelsel 120) # slowest: 0.83 s
procctl_timeout(fuzz_link 120) # slowest: 0.54 s
procctl_timeout(fuzz_pbwire 120) # slowest: 0.60 s
procctl_timeout(fuzz_podid 120) # slowest: 2.17 s
procctl_timeout(fuzz_process 120) # slowest: 1.15 s
procctl_timeout(fuzz_reflect 120) # slowest: 1.66 s
procctl_timeout(fuzz_statedata 120) # slowest: 2.03 s
procctl_timeout(header_docs 120) # slowest: 0.05 s
procctl_timeout(header_matrix 120) # slowest: 18.42 s
procctl_timeout(image 373) # slowest: 74.49 s
procctl_timeout(install 120) # slowest: 6.95 s
procctl_timeout(layering 120) # slowest: 1.92 s
procctl_timeout(make_test_summary 120) # slowest: 1.57 s
procctl_timeout(model_arbiter 1226) # slowest: 245.14 s
procctl_timeout(node_api 120) # slowest: 6.55 s
procctl_timeout(node_arbiter 120) # slowest: 3.57 s
procctl_timeout(node_cli 190) # slowest: 37.90 s
procctl_timeout(node_cupti 120) # slowest: 12.89 s
procctl_timeout(node_daemon 120) # slowest: 20.79 s
procctl_timeout(node_desired 120) # slowest: 15.67 s
procctl_timeout(node_fdflood 120) # slowest: 5.83 s
procctl_timeout(node_firsthour 120) # slowest: 18.48 s
procctl_timeout(node_grpclimits 120) # slowest: 21.26 s
procctl_timeout(node_hello 120) # slowest: 10.52 s
procctl_timeout(node_hostileserver 120) # slowest: 8.84 s
procctl_timeout(node_http 120) # slowest: 15.79 s
procctl_timeout(node_kube 172) # slowest: 34.40 s
procctl_timeout(node_limits 120) # slowest: 14.79 s
procctl_timeout(node_metrics 120) # slowest: 12.00 s
procctl_timeout(node_monitoring 125) # slowest: 24.93 s
procctl_timeout(node_nodes 120) # slowest: 17.52 s
procctl_timeout(node_pcsamp 120) # slowest: 9.02 s
procctl_timeout(node_reflection 120) # slowest: 6.22 s
procctl_timeout(node_reload 120) # slowest: 13.92 s
procctl_timeout(node_scale 567) # slowest: 113.26 s
procctl_timeout(node_security 246) # slowest: 49.18 s
procctl_timeout(node_slowloris 120) # slowest: 15.62 s
procctl_timeout(node_stall 120) # slowest: 10.05 s
procctl_timeout(node_systemd 120) # slowest: 7.53 s
procctl_timeout(node_tls 120) # slowest: 18.17 s
procctl_timeout(node_top 120) # slowest: 6.10 s
procctl_timeout(node_watch 120) # slowest: 14.24 s
procctl_timeout(prometheus_rules 120) # slowest: 1.07 s
procctl_timeout(proto_lint 120) # slowest: 1.37 s
procctl_timeout(readme 120) # slowest: 1.41 s
procctl_timeout(seed 120) # slowest: 17.22 s
procctl_timeout(spdx 120) # slowest: 6.12 s
procctl_timeout(test_arbiter 120) # slowest: 0.66 s
procctl_timeout(test_arbiter_ticks 120) # slowest: 0.10 s
procctl_timeout(test_attach 120) # slowest: 2.98 s
procctl_timeout(test_base64 120) # slowest: 0.08 s
procctl_timeout(test_channel 120) # slowest: 4.72 s
procctl_timeout(test_client 120) # slowest: 1.74 s
procctl_timeout(test_config 120) # slowest: 0.14 s
procctl_timeout(test_crc 120) # slowest: 0.18 s
procctl_timeout(test_desired 120) # slowest: 0.20 s
procctl_timeout(test_desired_files 120) # slowest: 0.15 s
procctl_timeout(test_elfnote 120) # slowest: 0.19 s
procctl_timeout(test_event 120) # slowest: 0.88 s
procctl_timeout(test_fork 120) # slowest: 0.28 s
procctl_timeout(test_fusefd 120) # slowest: 0.36 s
procctl_timeout(test_grants 120) # slowest: 0.53 s
procctl_timeout(test_hello 120) # slowest: 3.29 s
procctl_timeout(test_hello_limits 138) # slowest: 27.59 s
procctl_timeout(test_init 120) # slowest: 0.10 s
procctl_timeout(test_labelsel 120) # slowest: 0.10 s
procctl_timeout(test_lease 120) # slowest: 7.14 s
procctl_timeout(test_lock 120) # slowest: 0.14 s
procctl_timeout(test_loop 120) # slowest: 0.13 s
procctl_timeout(test_opts 120) # slowest: 0.11 s
procctl_timeout(test_podid 120) # slowest: 0.13 s
procctl_timeout(test_podmeta 120) # slowest: 0.12 s
procctl_timeout(test_prom 120) # slowest: 0.27 s
procctl_timeout(test_reflect 120) # slowest: 0.70 s
procctl_timeout(test_region 120) # slowest: 0.08 s
procctl_timeout(test_registry 120) # slowest: 8.14 s
procctl_timeout(test_registry_bells 120) # slowest: 9.05 s
procctl_timeout(test_registry_owner 120) # slowest: 10.61 s
procctl_timeout(test_rules 120) # slowest: 3.43 s
procctl_timeout(test_scale 120) # slowest: 19.95 s
procctl_timeout(test_scan 120) # slowest: 0.14 s
procctl_timeout(test_seqretry 120) # slowest: 1.20 s
procctl_timeout(test_state 120) # slowest: 1.64 s
procctl_timeout(test_timer 120) # slowest: 0.39 s
procctl_timeout(test_token 120) # slowest: 3.83 s
procctl_timeout(test_token_agents 120) # slowest: 18.90 s
procctl_timeout(test_usdt 120) # slowest: 0.16 s
procctl_timeout(test_writer 120) # slowest: 0.44 s
procctl_timeout(tree_table 120) # slowest: 4.64 s
procctl_timeout(usdt_readelf 120) # slowest: 0.04 s
