! The device interface from Fortran 90 (PAPIf_enum_dev_type, PAPIf_get_dev_type_attr,
! PAPIf_get_dev_attr, with f90papi.h's constants), printed one "key value" a line;
! papi/tests/fortran.rs builds it against PAPI 7.0's f90papi.h and against ours and runs it
! on PAPI 7.0's library and on ours.
program devices
  implicit none
  include 'f90papi.h'
  integer :: check, handle, value, id, count, attribute, rounds, threads, numas, node
  character(len=PAPI_MAX_STR_LEN) :: name, status, cpu_name

  check = PAPI_VER_CURRENT
  call PAPIf_library_init(check)
  if (check /= PAPI_VER_CURRENT) stop 1

  handle = -1
  call PAPIf_enum_dev_type(PAPI_DEV_TYPE_ENUM__FIRST, handle, check)
  print '(a, 1x, i0, 1x, i0)', 'enum.first', check, handle
  do rounds = 1, 8
    handle = -1
    call PAPIf_enum_dev_type(PAPI_DEV_TYPE_ENUM__ALL, handle, check)
    if (check /= PAPI_OK) exit
    id = -9
    call PAPIf_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__INT_PAPI_ID, id, name, check)
    print '(a, i0, a, 1x, i0, 1x, i0)', 'type', id, '.handle', handle, check
    value = -9
    call PAPIf_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__INT_VENDOR_ID, value, name, check)
    print '(a, i0, a, 1x, i0, 1x, i0)', 'type', id, '.vendor_id', check, value
    count = -9
    call PAPIf_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__INT_COUNT, count, name, check)
    print '(a, i0, a, 1x, i0, 1x, i0)', 'type', id, '.count', check, count
    name = 'unset'
    value = -9
    call PAPIf_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__CHAR_NAME, value, name, check)
    print '(a, i0, a, 1x, i0, 1x, i0, 1x, a)', 'type', id, '.name', check, value, cut(name)
    status = 'unset'
    call PAPIf_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__CHAR_STATUS, value, status, check)
    print '(a, i0, a, 1x, i0, 1x, a)', 'type', id, '.status', check, cut(status)
    ! PAPI 7.0 pads the type's strings with NULs, ours with blanks (fortran.rs knows).
    print '(a, i0, a, 1x, i0)', 'type', id, '.name_nul', index(name, char(0))
    call PAPIf_get_dev_type_attr(handle, 99, value, name, check)
    print '(a, i0, a, 1x, i0)', 'type', id, '.bad_attr', check
    if (id /= PAPI_DEV_TYPE_ID__CPU) cycle

    cpu_name = 'unset'
    call PAPIf_get_dev_attr(handle, 0, PAPI_DEV_ATTR__CPU_CHAR_NAME, value, cpu_name, check)
    print '(a, 1x, i0, 1x, a)', 'cpu.name', check, trim(cpu_name)
    print '(a, 1x, i0, 1x, i0)', 'cpu.name_blanks', len_trim(cpu_name), index(cpu_name, char(0))
    threads = 0
    numas = 0
    ! Every CPU attribute: PAPI 7.0's wrapper takes neither NUMA_MEM_SIZE (24) nor
    ! THR_NUMA_AFFINITY (25).
    do attribute = PAPI_DEV_ATTR__CPU_UINT_L1I_CACHE_SIZE, PAPI_DEV_ATTR__CPU_UINT_THR_NUMA_AFFINITY
      value = -9
      call PAPIf_get_dev_attr(handle, 0, attribute, value, cpu_name, check)
      print '(a, i0, 1x, i0, 1x, i0, 1x, i0)', 'cpu.attr', attribute, check, value, handle
      if (attribute == PAPI_DEV_ATTR__CPU_UINT_THREAD_COUNT) threads = value
      if (attribute == PAPI_DEV_ATTR__CPU_UINT_NUMA_COUNT) numas = value
    end do
    do node = 0, numas - 1
      value = -9
      call PAPIf_get_dev_attr(handle, node, PAPI_DEV_ATTR__CPU_UINT_THR_PER_NUMA, value, name, check)
      print '(a, i0, a, 1x, i0, 1x, i0)', 'cpu.node', node, '.threads', check, value
    end do
    print '(a, 1x, l1)', 'cpu.threads_known', threads > 0
    call PAPIf_get_dev_attr(handle, 0, 99, value, name, check)
    print '(a, 1x, i0)', 'cpu.bad_attr', check
  end do
  print '(a, 1x, i0, 1x, i0)', 'enum.end', check, rounds

  ! A new walk after the end: the type the subroutines read is the one it reaches.
  call PAPIf_enum_dev_type(PAPI_DEV_TYPE_ENUM__FIRST, handle, check)
  call PAPIf_enum_dev_type(PAPI_DEV_TYPE_ENUM__ROCM, handle, check)
  print '(a, 1x, i0)', 'again.rocm', check
  name = 'unset'
  call PAPIf_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__CHAR_NAME, value, name, check)
  print '(a, 1x, i0, 1x, a)', 'again.name', check, cut(name)
  call PAPIf_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__INT_PAPI_ID, value, name, check)
  print '(a, 1x, i0, 1x, i0)', 'again.id', check, value
  call PAPIf_shutdown()

contains

  ! A string up to its first NUL, without trailing blanks.
  function cut(s) result(t)
    character(len=*), intent(in) :: s
    character(len=:), allocatable :: t
    integer :: n
    n = index(s, char(0)) - 1
    if (n < 0) n = len(s)
    t = trim(s(1:n))
  end function cut
end program devices
