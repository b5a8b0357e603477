# SPDX-License-Identifier: Apache-2.0
# install-systemd.cmake - make install's procctl-node.service and its
# config file, for the prefix given at install time (cmake --install
# --prefix), staged in $DESTDIR when set. Set by CMakeLists.txt first:
# PROCCTL_SRC, PROCCTL_BIN (the build tree), PROCCTL_SBINDIR (relative to
# the prefix), PROCCTL_UNIT_DIR ("": PREFIX/lib/systemd/system, which
# systemd reads).
#   the unit:   UNIT_DIR/procctl-node.service, naming PREFIX/SBINDIR/procctl-node
#               and its config, ETC/procctl/procctl-node.conf (ETC: /etc for
#               the prefix /usr, else PREFIX/etc, as GNUInstallDirs has it)
#   the config: the example (server/config/procctl-node.conf) with HTTP off, as the
#               unit's sandbox wants (Unix sockets only); installed only when
#               there is none: an operator's file is never replaced
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(etc /etc)
else()
  set(etc "${prefix}/etc")
endif()
set(unit_dir "${PROCCTL_UNIT_DIR}")
if(NOT unit_dir)
  set(unit_dir "${prefix}/lib/systemd/system")
endif()
set(SBINDIR "${prefix}/${PROCCTL_SBINDIR}")
set(CONFDIR "${etc}/procctl")
set(out "${PROCCTL_BIN}/systemd")
configure_file("${PROCCTL_SRC}/deploy/systemd/procctl-node.service.in" "${out}/procctl-node.service" @ONLY)
file(INSTALL "${out}/procctl-node.service" DESTINATION "${unit_dir}")

file(READ "${PROCCTL_SRC}/server/config/procctl-node.conf" conf)
set(http "# http_listen = 127.0.0.1:9464\n")
string(FIND "${conf}" "${http}" at)
if(at LESS 0)
  message(FATAL_ERROR "server/config/procctl-node.conf has no line '# http_listen = 127.0.0.1:9464'")
endif()
string(REPLACE "${http}" "${http}# As installed for procctl-node.service, whose sandbox allows Unix sockets
# only: off. Serving it takes the drop-in the unit describes as well.
http_listen =
" conf "${conf}")
file(WRITE "${out}/procctl-node.conf" "${conf}")
if(EXISTS "$ENV{DESTDIR}${CONFDIR}/procctl-node.conf")
  message(STATUS "Kept: $ENV{DESTDIR}${CONFDIR}/procctl-node.conf (not replaced)")
else()
  file(INSTALL "${out}/procctl-node.conf" DESTINATION "${CONFDIR}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endif()
